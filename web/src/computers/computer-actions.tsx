"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "@/api/client.ts";
import { ConfirmButton } from "@/ui/confirm.tsx";
import { Busy, ErrorNote } from "@/ui/feedback.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import styles from "./computers.module.css";
import {
  type Computer,
  computerActionKey,
  computerName,
  computersKey,
  isTransitional,
  storeComputer,
} from "./queries.ts";

type Action = "start" | "stop" | "destroy";

const PROGRESS: Record<Action, string> = {
  start: "Starting…",
  stop: "Stopping… (the home is checkpointed first)",
  destroy: "Destroying…",
};

const FAILED: Record<Action, string> = {
  start: "Could not start",
  stop: "Could not stop",
  destroy: "Could not destroy",
};

/** Start, stop and destroy one computer: the api call, then its answer into the caches. */
function useComputerAction(computer: Computer) {
  const client = useQueryClient();
  const { workspaceId, id: computerId } = computer;
  return useMutation({
    mutationKey: computerActionKey(computerId),
    mutationFn: (action: Action) => {
      const params = { path: { workspaceId, computerId } };
      switch (action) {
        case "start":
          return unwrap(api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/start", { params }));
        case "stop":
          return unwrap(api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/stop", { params }));
        case "destroy":
          return unwrap(api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/destroy", { params }));
      }
    },
    onSuccess: (answer) => storeComputer(client, answer),
    // Whatever happened (a stop also takes a checkpoint), the computer's views are read again.
    onSettled: () => client.invalidateQueries({ queryKey: computersKey(workspaceId) }),
  });
}

/**
 * The lifecycle buttons of one computer, on the list and on its page. Members may start; stopping and
 * destroying are for admins and owners (the api's rule). While anything is under way, here or
 * elsewhere (another tab, a bot's session starting it), the progress shows instead of the buttons.
 */
export function ComputerActions({ computer, role }: { computer: Computer; role: Role | undefined }) {
  const action = useComputerAction(computer);
  const name = computerName(computer);
  const { state } = computer;
  const pending = action.isPending ? action.variables : undefined;
  const canStart = atLeast(role, "member") && state !== "running";
  const isAdmin = atLeast(role, "admin");

  let progress: string | null = null;
  if (pending) progress = PROGRESS[pending];
  else if (state === "booting") progress = PROGRESS.start;
  else if (state === "suspending") progress = "Stopping…";

  return (
    <div className={styles.actions}>
      <div className="row">
        {progress ? (
          <Busy label={progress} />
        ) : (
          <>
            {canStart ? (
              <button type="button" className="primary" onClick={() => action.mutate("start")}>
                Start
              </button>
            ) : null}
            {isAdmin && (state === "running" || state === "error") ? (
              <button type="button" onClick={() => action.mutate("stop")}>
                Stop
              </button>
            ) : null}
            {isAdmin && !isTransitional(state) ? (
              <ConfirmButton
                label="Destroy"
                title={`Destroy the machine of ${name}?`}
                confirmLabel="Destroy"
                danger
                onConfirm={() => action.mutate("destroy")}
              >
                <p>
                  The machine is removed: running programs end and anything outside the home is lost. The home
                  and its checkpoints stay, and the next start makes a fresh machine on the same home.
                </p>
              </ConfirmButton>
            ) : null}
          </>
        )}
      </div>
      {action.error && pending === undefined ? (
        <ErrorNote error={action.error} prefix={FAILED[action.variables ?? "start"]} />
      ) : null}
    </div>
  );
}
