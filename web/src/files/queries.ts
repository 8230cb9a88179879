"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { computerKey } from "@/computers/queries.ts";

export type FileEntry = Schema<"FileEntry">;

const filesKey = (workspaceId: string, computerId: string) =>
  [...computerKey(workspaceId, computerId), "files"] as const;

export function useFolder(workspaceId: string, computerId: string, path: string, enabled: boolean) {
  return useQuery({
    queryKey: [...filesKey(workspaceId, computerId), path],
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}/files", {
          params: { path: { workspaceId, computerId }, query: { path } },
        }),
      ),
    enabled,
  });
}

/**
 * Where the browser downloads a file: the api's own route on the dashboard's origin, so the session
 * cookie goes along and the browser saves the answer (it names the file) instead of the page holding it.
 */
export const fileDownloadHref = (workspaceId: string, computerId: string, path: string) =>
  `/v1/workspaces/${encodeURIComponent(workspaceId)}/computers/${encodeURIComponent(computerId)}/files/content?path=${encodeURIComponent(path)}`;

/** Writes a file's raw bytes at `path` (replacing any file there); admins and owners. */
export function useUpload(workspaceId: string, computerId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ path, file }: { path: string; file: File }) =>
      unwrap(
        api.PUT("/v1/workspaces/{workspaceId}/computers/{computerId}/files/content", {
          params: { path: { workspaceId, computerId }, query: { path } },
          // The document types a binary body as a string; in the browser it is the File itself,
          // sent as is (not as JSON).
          body: file as unknown as string,
          bodySerializer: (bytes) => bytes,
          headers: { "content-type": "application/octet-stream" },
        }),
      ),
    onSettled: () => client.invalidateQueries({ queryKey: filesKey(workspaceId, computerId) }),
  });
}
