"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import type { Person } from "@/auth/session.ts";
import { type Computer, computerKey, computersKey } from "@/computers/queries.ts";

export type ControlLease = Computer["control"][number];

/** The live control lease of one screen, if anyone holds one (per the computer's record). */
export const leaseOf = (computer: Computer, screen: number): ControlLease | undefined =>
  computer.control.find((lease) => lease.index === screen);

/**
 * Take, renew and release (or, for admins, revoke) control of one screen. Each answer is written into
 * the computer's cached record at once, so the viewer switches mode without waiting for the next poll;
 * the record is then read again to be sure.
 */
export function useScreenControl(computer: Computer, screen: number, me: Person) {
  const client = useQueryClient();
  const { workspaceId, id: computerId } = computer;
  const key = computerKey(workspaceId, computerId);
  const path = { workspaceId, computerId, index: String(screen) };

  const setLease = (lease: ControlLease | null) =>
    client.setQueryData<Computer>(key, (old) =>
      old
        ? {
            ...old,
            control: [...old.control.filter((one) => one.index !== screen), ...(lease ? [lease] : [])],
          }
        : old,
    );
  const mine = (granted: Schema<"ControlLease">): ControlLease => ({
    index: granted.screen,
    leaseId: granted.leaseId,
    holder: { id: me.userId, name: me.name, type: "user" },
    expiresAt: granted.expiresAt,
  });
  // the computer, and the list's "who controls" column
  const refresh = () =>
    Promise.all([
      client.invalidateQueries({ queryKey: key, exact: true }),
      client.invalidateQueries({ queryKey: computersKey(workspaceId), exact: true }),
    ]);
  // A poll answered before the change must not put the old lease back after it.
  const holdPolls = () => client.cancelQueries({ queryKey: key, exact: true });

  // Each action starts by forgetting the others' errors, so only the latest failure is shown.
  const forgetOthers = (keep: { reset(): void }): Promise<void> => {
    for (const action of [take, renew, end]) if (action !== keep) action.reset();
    return holdPolls();
  };

  const take = useMutation({
    onMutate: (): Promise<void> => forgetOthers(take),
    mutationFn: () =>
      unwrap(
        api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control", {
          params: { path },
        }),
      ),
    onSuccess: (granted) => setLease(mine(granted)),
    onSettled: refresh,
  });
  const renew = useMutation({
    onMutate: (): Promise<void> => forgetOthers(renew),
    mutationFn: (leaseId: string) =>
      unwrap(
        api.POST(
          "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control/{leaseId}/renew",
          {
            params: { path: { ...path, leaseId } },
          },
        ),
      ),
    onSuccess: (renewed) => setLease(mine(renewed)),
    onSettled: refresh,
  });
  /** Release one's own lease; revoking someone else's is the same call (admins and owners only). */
  const end = useMutation({
    onMutate: (): Promise<void> => forgetOthers(end),
    mutationFn: (leaseId: string) =>
      unwrap(
        api.DELETE("/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control/{leaseId}", {
          params: { path: { ...path, leaseId } },
        }),
      ),
    onSuccess: () => setLease(null),
    onSettled: refresh,
  });
  return { take, renew, end };
}

/** Who controls a screen, as the dashboard names them: a person by name, a key as a key. */
export const controllerName = (holder: { type: "user" | "api_key"; name: string }): string =>
  holder.type === "api_key" ? `API key “${holder.name}”` : holder.name;
