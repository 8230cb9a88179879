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
/**
 * Reads a file and hands it to the browser to save. Read through the api client rather than a plain
 * link, so that a refusal (stopped computer, file too large) shows as a problem instead of being
 * saved as the file.
 */
export function useDownload(workspaceId: string, computerId: string) {
  return useMutation({
    mutationFn: async (file: { path: string; name: string }) => {
      const blob = await unwrap(
        api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}/files/content", {
          params: { path: { workspaceId, computerId }, query: { path: file.path } },
          parseAs: "blob",
        }),
      );
      const url = URL.createObjectURL(blob);
      const anchor = Object.assign(document.createElement("a"), { href: url, download: file.name });
      anchor.click();
      // the click has handed the blob to the browser's download; the URL is no longer needed
      setTimeout(() => URL.revokeObjectURL(url), 0);
    },
  });
}

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
