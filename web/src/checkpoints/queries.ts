"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { type Computer, computerKey, computersKey } from "@/computers/queries.ts";
import { useLive } from "@/events/live.ts";

export type Checkpoint = Schema<"Checkpoint">;
export type CheckpointList = Schema<"CheckpointList">;
export type RestoreInto = Schema<"CheckpointRestore">["into"];

const checkpointsKey = (computer: Computer) => [
  ...computerKey(computer.workspaceId, computer.id),
  "checkpoints",
];

/**
 * Sessions ending, stops, idle suspension and retries take checkpoints without this page: each one
 * (taken, failed, abandoned, restored, pruned) is an event that reads the timeline again. Polled
 * only while events are not followed (a viewer, a lost stream).
 */
const POLL_MS = 30_000;
const RETRY_POLL_MS = 10_000;

export function useCheckpoints(computer: Computer) {
  const { workspaceId, id: computerId } = computer;
  const live = useLive();
  return useQuery({
    queryKey: checkpointsKey(computer),
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints", {
          params: { path: { workspaceId, computerId } },
        }),
      ),
    refetchInterval: (query) => (live ? false : query.state.data?.retry ? RETRY_POLL_MS : POLL_MS),
  });
}

/** Checkpoints the home now (members and up); with a browser running this can take about 30 s. */
export function useTakeCheckpoint(computer: Computer) {
  const client = useQueryClient();
  const { workspaceId, id: computerId } = computer;
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints", {
          params: { path: { workspaceId, computerId } },
        }),
      ),
    onSuccess: (taken) =>
      client.setQueryData<CheckpointList>(checkpointsKey(computer), (list) =>
        list ? { ...list, items: [taken, ...list.items.filter((one) => one.id !== taken.id)] } : list,
      ),
    onSettled: () => client.invalidateQueries({ queryKey: checkpointsKey(computer) }),
  });
}

/**
 * Puts a checkpoint back (admins and owners): into the running machine, or onto a fresh one. Either
 * way the computer restarts its browsers and a `before-restore` checkpoint appears, so everything
 * about the computer is read again afterwards.
 */
export function useRestoreCheckpoint(computer: Computer) {
  const client = useQueryClient();
  const { workspaceId, id: computerId } = computer;
  return useMutation({
    mutationFn: ({ checkpointId, into }: { checkpointId: string; into: RestoreInto }) =>
      unwrap(
        api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints/{checkpointId}/restore", {
          params: { path: { workspaceId, computerId, checkpointId } },
          body: { into },
        }),
      ),
    onSettled: () => client.invalidateQueries({ queryKey: computersKey(workspaceId) }),
  });
}

/** The checkpoint as a tar of the home (admins and owners; audited), downloaded by the browser. */
export const archiveHref = (computer: Computer, checkpointId: string) =>
  `/v1/workspaces/${encodeURIComponent(computer.workspaceId)}/computers/${encodeURIComponent(computer.id)}/checkpoints/${encodeURIComponent(checkpointId)}/archive`;
