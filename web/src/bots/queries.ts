"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { computersKey } from "@/computers/queries.ts";
import { pollAtExpiry, useLive } from "@/events/live.ts";
import type { Role } from "@/workspaces/queries.ts";

export type Bot = Schema<"Bot">;
export type ComputerMode = Bot["computerMode"];

/** The api lets admins and owners create, switch and archive bots (api/src/bots/routes.ts). */
export const MANAGE_BOTS: Role = "admin";

/** Lengths the api accepts for a name and for each charter text. */
export const BOT_LIMITS = { name: 100, charter: 2_000 } as const;

export const botsKey = (workspaceId: string) => ["bots", workspaceId] as const;

export function useBots(workspaceId: string, includeArchived: boolean) {
  const live = useLive();
  return useQuery({
    queryKey: [...botsKey(workspaceId), { includeArchived }],
    queryFn: async () =>
      (
        await unwrap(
          api.GET("/v1/workspaces/{workspaceId}/bots", {
            params: { path: { workspaceId }, query: { includeArchived: includeArchived ? "true" : "false" } },
          }),
        )
      ).items,
    // Busy and idle follow sessions that automations open and end elsewhere: session events read
    // the list again (and just after a session's expiry shown, for its heartbeats); without them
    // (a viewer, a lost stream) it is polled.
    refetchInterval: ({ state: { data = [] } }) =>
      live
        ? pollAtExpiry(
            data.flatMap((bot) => (bot.session ? [bot.session.expiresAt] : [])),
            false,
          )
        : 10_000,
  });
}

/** A change to one bot; the list is fetched again afterwards, since status and computer follow from it. */
function useBotChange<Input>(workspaceId: string, change: (input: Input) => Promise<Bot>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: change,
    // a bot's mode and life decide which computers exist and whose names they carry
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: botsKey(workspaceId) }),
        client.invalidateQueries({ queryKey: computersKey(workspaceId) }),
      ]),
  });
}

export function useCreateBot(workspaceId: string) {
  return useBotChange(workspaceId, (body: Schema<"CreateBot">) =>
    unwrap(api.POST("/v1/workspaces/{workspaceId}/bots", { params: { path: { workspaceId } }, body })),
  );
}

export function useSwitchBotMode(workspaceId: string, botId: string) {
  return useBotChange(workspaceId, (body: Schema<"SwitchBotMode">) =>
    unwrap(
      api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/mode", {
        params: { path: { workspaceId, botId } },
        body,
      }),
    ),
  );
}

export function useArchiveBot(workspaceId: string, botId: string) {
  return useBotChange(workspaceId, () =>
    unwrap(
      api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/archive", {
        params: { path: { workspaceId, botId } },
      }),
    ),
  );
}
