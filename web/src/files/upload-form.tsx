"use client";

import { type FormEvent, useId, useRef, useState } from "react";
import { Busy, ErrorNote } from "@/ui/feedback.tsx";
import styles from "./files.module.css";
import { joinPath } from "./paths.ts";
import { useUpload } from "./queries.ts";

/** Uploads one file into the folder shown (admins and owners). */
export function UploadForm({
  workspaceId,
  computerId,
  folder,
}: {
  workspaceId: string;
  computerId: string;
  folder: string;
}) {
  const upload = useUpload(workspaceId, computerId);
  const input = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const id = useId();

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!file) return;
    const path = joinPath(folder, file.name);
    setDone(null);
    upload.mutate(
      { path, file },
      {
        onSuccess: () => {
          setDone(path);
          setFile(null);
          if (input.current) input.current.value = "";
        },
      },
    );
  };

  return (
    <form className={styles.upload} onSubmit={submit}>
      <div className="field">
        {/* Not "File to upload": a file input is a button, and its name must not answer for "Upload". */}
        <label htmlFor={id}>Choose a file</label>
        <input
          id={id}
          ref={input}
          type="file"
          aria-describedby={`${id}-hint`}
          onChange={(event) => setFile(event.target.files?.[0] ?? null)}
        />
        <span id={`${id}-hint`} className="hint">
          It is uploaded into <span className="mono">{folder || "the home"}</span>; a file of the same name
          there is replaced.
        </span>
      </div>
      <div className="row">
        <button type="submit" disabled={!file || upload.isPending}>
          Upload
        </button>
        {upload.isPending ? <Busy label={`Uploading ${file?.name ?? ""}…`} /> : null}
        {done && !upload.isPending ? (
          <span role="status" className="small">
            Uploaded <span className="mono">{done}</span>.
          </span>
        ) : null}
      </div>
      <ErrorNote error={upload.error} prefix="Could not upload" />
    </form>
  );
}
