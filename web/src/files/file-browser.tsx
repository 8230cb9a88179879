"use client";

import { useState } from "react";
import { Problem } from "@/api/client.ts";
import type { Computer } from "@/computers/queries.ts";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { formatBytes } from "@/ui/format.ts";
import { Time } from "@/ui/time.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { Breadcrumbs } from "./breadcrumbs.tsx";
import styles from "./files.module.css";
import { parentOf } from "./paths.ts";
import { type FileEntry, useDownload, useFolder } from "./queries.ts";
import { TeamFolders } from "./team-folders.tsx";
import { UploadForm } from "./upload-form.tsx";

/**
 * The computer's home, folder by folder: members browse and download, admins and owners also upload.
 * It reads the running machine (the api never starts a computer for this).
 */
export function FileBrowser({ computer, role }: { computer: Computer; role: Role | undefined }) {
  const [path, setPath] = useState("");
  const { workspaceId, id: computerId } = computer;
  const running = computer.state === "running";
  const allowed = atLeast(role, "member");
  const folder = useFolder(workspaceId, computerId, path, running && allowed);
  const download = useDownload(workspaceId, computerId);
  const team = computer.scope === "team";

  if (!allowed)
    return <p className="muted">Viewers cannot browse the computer's files; members and admins can.</p>;
  if (!running)
    return (
      <p className="notice">
        The computer is {computer.state}. Its files can be browsed while it runs; its checkpoints below hold
        the home as it was.
      </p>
    );

  return (
    <div className="stack">
      {team ? (
        <div className="notice">
          <p>
            On the Team Computer each bot starts in its own folder{" "}
            <span className="mono">bots/&lt;bot id&gt;/</span>, and <span className="mono">shared/</span> is
            for deliberate sharing. These folders organise work; they are{" "}
            <strong>not security boundaries</strong>: every bot on this computer can read and change the whole
            team home.
          </p>
          <TeamFolders workspaceId={workspaceId} onOpen={setPath} />
        </div>
      ) : (
        <p className="muted small">This is the bot's own home on its Private Computer.</p>
      )}
      <div className="row">
        <button type="button" disabled={path === ""} onClick={() => setPath(parentOf(path))}>
          Parent folder
        </button>
        <Breadcrumbs path={path} onOpen={setPath} />
      </div>
      {folder.isPending ? (
        <Loading what="the folder" />
      ) : folder.error instanceof Problem && folder.error.status === 404 ? (
        // A bot's folder or shared/ exists only once something was written there.
        <p className="notice" role="status">
          <span className="mono">{path}</span> does not exist (yet).
          {atLeast(role, "admin") ? " Uploading a file here creates it." : null}
        </p>
      ) : folder.error ? (
        <ErrorNote error={folder.error} prefix="Could not open the folder" />
      ) : folder.data.items.length === 0 ? (
        <EmptyState title="This folder is empty" />
      ) : (
        <FolderTable
          entries={folder.data.items}
          onOpen={setPath}
          onDownload={(file) => download.mutate(file)}
          downloading={download.isPending ? download.variables?.path : undefined}
        />
      )}
      <ErrorNote
        error={download.error}
        prefix={`Could not download ${download.variables?.name ?? "the file"}`}
      />
      {atLeast(role, "admin") ? (
        <UploadForm key={path} workspaceId={workspaceId} computerId={computerId} folder={path} />
      ) : (
        <p className="muted small">Admins and owners can upload files.</p>
      )}
    </div>
  );
}

function FolderTable({
  entries,
  onOpen,
  onDownload,
  downloading,
}: {
  entries: FileEntry[];
  onOpen: (path: string) => void;
  onDownload: (file: FileEntry) => void;
  /** The path being downloaded right now. */
  downloading: string | undefined;
}) {
  // Folders first, then files, each by name as the api sorted them.
  const sorted = [
    ...entries.filter((entry) => entry.type === "directory"),
    ...entries.filter((entry) => entry.type !== "directory"),
  ];
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">Files in this folder</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Size</th>
            <th scope="col">Modified</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {sorted.map((entry) => (
            <tr key={entry.path}>
              <td className={`mono ${styles.name}`}>
                {entry.type === "directory" ? (
                  <button type="button" className="link" onClick={() => onOpen(entry.path)}>
                    {entry.name}/
                  </button>
                ) : (
                  <span>
                    {entry.name}
                    {entry.type === "symlink" ? <span className="muted small"> (link)</span> : null}
                    {entry.executable ? <span className="muted small"> (executable)</span> : null}
                  </span>
                )}
              </td>
              <td>
                {entry.type === "directory" ? <span className="muted">folder</span> : formatBytes(entry.size)}
              </td>
              <td>
                <Time iso={entry.modifiedAt} />
              </td>
              <td>
                {entry.type === "directory" ? null : (
                  <button
                    type="button"
                    aria-label={`Download ${entry.name}`}
                    disabled={downloading === entry.path}
                    onClick={() => onDownload(entry)}
                  >
                    {downloading === entry.path ? "Downloading…" : "Download"}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
