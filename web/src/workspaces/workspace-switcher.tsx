"use client";

import { useRouter } from "next/navigation";
import { useWorkspace, useWorkspaces } from "./queries.ts";

const NEW = "__new__";

export function WorkspaceSwitcher() {
  const router = useRouter();
  const { workspaceId } = useWorkspace();
  const { data: workspaces } = useWorkspaces();
  return (
    <div className="field">
      <label htmlFor="workspace-switcher">Workspace</label>
      {workspaces ? (
        <select
          id="workspace-switcher"
          value={workspaceId}
          onChange={(e) =>
            router.push(e.target.value === NEW ? "/workspaces/new" : `/w/${e.target.value}/computers`)
          }
        >
          {workspaces.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name} ({w.role})
            </option>
          ))}
          <option value={NEW}>+ New workspace…</option>
        </select>
      ) : (
        // until the list arrives, nothing to pick (and no "New workspace" picked by default)
        <select id="workspace-switcher" disabled>
          <option>Loading…</option>
        </select>
      )}
    </div>
  );
}
