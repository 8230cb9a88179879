"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { type FormEvent, useState } from "react";
import { api, unwrap } from "@/api/client.ts";
import { ErrorNote } from "@/ui/feedback.tsx";
import { workspacesKey } from "./queries.ts";

export function CreateWorkspaceForm() {
  const router = useRouter();
  const client = useQueryClient();
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/v1/workspaces", { body: { name } })),
    onSuccess: async (workspace) => {
      await client.invalidateQueries({ queryKey: workspacesKey });
      router.push(`/w/${workspace.id}/computers`);
    },
  });
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="stack" onSubmit={onSubmit} aria-label="Create a workspace">
      <div className="field">
        <label htmlFor="workspace-name">Workspace name</label>
        <input
          id="workspace-name"
          required
          maxLength={100}
          value={name}
          onChange={(e) => setName(e.target.value)}
        />
        <span className="hint">
          Your team's bots, computers and members live in a workspace. You will own it.
        </span>
      </div>
      <ErrorNote error={create.error} />
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? "Creating…" : "Create workspace"}
      </button>
    </form>
  );
}
