"use client";

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";

export type Recording = Schema<"Recording">;
export type RecordingInput = Schema<"RecordingInput">;
export type RecordingPolicy = Schema<"RecordingPolicy">;
export type RecordingMode = RecordingPolicy["mode"];

const base = (workspaceId: string) => `/v1/workspaces/${encodeURIComponent(workspaceId)}`;
const recordingPath = (workspaceId: string, recordingId: string) =>
  `${base(workspaceId)}/recordings/${encodeURIComponent(recordingId)}`;

/** Which recordings a list shows: all of the workspace's, or one computer's, session's or control's. */
export interface RecordingFilter {
  computerId?: string;
  sessionId?: string;
  controlLeaseId?: string;
}

export const recordingsKey = (workspaceId: string) => ["workspaces", workspaceId, "recordings"] as const;

/** A recording still being made changes size and length as it goes; the list follows it. */
const LIVE_POLL_MS = 10_000;

export function useRecordings(workspaceId: string, filter: RecordingFilter) {
  return useInfiniteQuery({
    queryKey: [...recordingsKey(workspaceId), "list", filter],
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/recordings", {
          params: { path: { workspaceId }, query: pageParam ? { ...filter, cursor: pageParam } : filter },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor,
    refetchInterval: ({ state: { data } }) =>
      data?.pages.some((page) => page.items.some((one) => one.status === "recording")) ? LIVE_POLL_MS : false,
  });
}

export function useRecording(workspaceId: string, recordingId: string) {
  return useQuery({
    queryKey: [...recordingsKey(workspaceId), recordingId],
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/recordings/{recordingId}", {
          params: { path: { workspaceId, recordingId } },
        }),
      ),
    refetchInterval: ({ state: { data } }) => (data?.status === "recording" ? LIVE_POLL_MS : false),
  });
}

export function useRecordingInputs(workspaceId: string, recordingId: string, enabled: boolean) {
  return useQuery({
    queryKey: [...recordingsKey(workspaceId), recordingId, "inputs"],
    queryFn: async () =>
      (
        await unwrap(
          api.GET("/v1/workspaces/{workspaceId}/recordings/{recordingId}/inputs", {
            params: { path: { workspaceId, recordingId } },
          }),
        )
      ).inputs,
    enabled,
  });
}

/** The recording file (audited as a playback); `download` makes it an attachment (audited as a download). */
export const contentHref = (workspaceId: string, recordingId: string, download = false) =>
  `${recordingPath(workspaceId, recordingId)}/content${download ? "?download=1" : ""}`;

/** The player's page, at a moment (ms into the recording) when given. */
export const playerHref = (workspaceId: string, recordingId: string, at?: number) =>
  `/w/${encodeURIComponent(workspaceId)}/recordings/${encodeURIComponent(recordingId)}${
    at === undefined ? "" : `?at=${Math.max(0, Math.round(at))}`
  }`;

/** The recordings list, narrowed to one computer, session or control lease. */
export const recordingsHref = (workspaceId: string, filter: RecordingFilter = {}) => {
  const query = new URLSearchParams(
    Object.entries(filter).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  ).toString();
  return `/w/${encodeURIComponent(workspaceId)}/recordings${query ? `?${query}` : ""}`;
};

/** An export being made is asked about this often. */
const EXPORT_POLL_MS = 1_000;

export function useRequestExport(workspaceId: string, recordingId: string) {
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/v1/workspaces/{workspaceId}/recordings/{recordingId}/exports", {
          params: { path: { workspaceId, recordingId } },
          body: { format: "webm" },
        }),
      ),
  });
}

export function useRecordingExport(workspaceId: string, recordingId: string, exportId: string | undefined) {
  return useQuery({
    queryKey: [...recordingsKey(workspaceId), recordingId, "exports", exportId],
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/recordings/{recordingId}/exports/{exportId}", {
          params: { path: { workspaceId, recordingId, exportId: exportId ?? "" } },
        }),
      ),
    enabled: exportId !== undefined,
    refetchInterval: ({ state: { data } }) =>
      data?.status === "ready" || data?.status === "failed" ? false : EXPORT_POLL_MS,
  });
}

export const exportHref = (workspaceId: string, recordingId: string, exportId: string) =>
  `${recordingPath(workspaceId, recordingId)}/exports/${encodeURIComponent(exportId)}/content`;

const policyKey = (workspaceId: string) => ["workspaces", workspaceId, "recording-policy"] as const;

export function useRecordingPolicy(workspaceId: string) {
  return useQuery({
    queryKey: policyKey(workspaceId),
    queryFn: () =>
      unwrap(api.GET("/v1/workspaces/{workspaceId}/recording-policy", { params: { path: { workspaceId } } })),
  });
}

export function useSetRecordingPolicy(workspaceId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: RecordingPolicy) =>
      unwrap(
        api.PUT("/v1/workspaces/{workspaceId}/recording-policy", { params: { path: { workspaceId } }, body }),
      ),
    onSuccess: (policy) => {
      client.setQueryData(policyKey(workspaceId), policy);
      // the change is audited
      return client.invalidateQueries({ queryKey: ["audit"] });
    },
  });
}
