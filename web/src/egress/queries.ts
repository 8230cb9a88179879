"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { computerKey } from "@/computers/queries.ts";

export type EgressPolicyInput = Schema<"EgressPolicyInput">;
export type EgressLevel = EgressPolicyInput["level"];
export type WorkspaceEgress = Schema<"WorkspaceEgressPolicy">;
export type ComputerEgress = Schema<"ComputerEgressPolicy">;
export type AllowlistLimits = Schema<"EgressAllowlistLimits">;

/** The refused count moves while a bot works; the policy itself changes only by an admin. */
const EGRESS_POLL_MS = 10_000;

const workspaceEgressKey = (workspaceId: string) => ["workspaces", workspaceId, "egress-policy"] as const;
const computerEgressKey = (workspaceId: string, computerId: string) =>
  [...computerKey(workspaceId, computerId), "egress-policy"] as const;

export function useWorkspaceEgress(workspaceId: string) {
  return useQuery({
    queryKey: workspaceEgressKey(workspaceId),
    queryFn: () =>
      unwrap(api.GET("/v1/workspaces/{workspaceId}/egress-policy", { params: { path: { workspaceId } } })),
  });
}

export function useSetWorkspaceEgress(workspaceId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: EgressPolicyInput) =>
      unwrap(
        api.PUT("/v1/workspaces/{workspaceId}/egress-policy", { params: { path: { workspaceId } }, body }),
      ),
    onSuccess: (policy) => {
      client.setQueryData(workspaceEgressKey(workspaceId), policy);
      // computers that inherit it now show it, and audit trails the change
      return Promise.all([
        client.invalidateQueries({ queryKey: ["workspaces", workspaceId, "computers"] }),
        client.invalidateQueries({ queryKey: ["audit"] }),
      ]);
    },
  });
}

export function useComputerEgress(workspaceId: string, computerId: string) {
  return useQuery({
    queryKey: computerEgressKey(workspaceId, computerId),
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}/egress-policy", {
          params: { path: { workspaceId, computerId } },
        }),
      ),
    refetchInterval: EGRESS_POLL_MS,
  });
}

/** Sets the computer's own policy, or (null) returns it to its workspace's. */
export function useSetComputerEgress(workspaceId: string, computerId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: EgressPolicyInput | null) => {
      const params = { path: { workspaceId, computerId } };
      const path = "/v1/workspaces/{workspaceId}/computers/{computerId}/egress-policy";
      return unwrap(body ? api.PUT(path, { params, body }) : api.DELETE(path, { params }));
    },
    onSuccess: (policy) => {
      client.setQueryData(computerEgressKey(workspaceId, computerId), policy);
      // the page's audit trail shows the change at once
      return Promise.all([
        client.invalidateQueries({ queryKey: computerKey(workspaceId, computerId), exact: true }),
        client.invalidateQueries({ queryKey: ["audit"] }),
      ]);
    },
  });
}

export const LEVEL_LABELS: Record<EgressLevel, string> = {
  open: "Open",
  default: "Public internet only",
  allowlist: "Allowlist",
  offline: "Offline",
};

export const LEVEL_EXPLANATIONS: Record<EgressLevel, string> = {
  open: "Anything but the host Cubicle runs on, the local network included.",
  default:
    "The public internet. Private networks, link-local addresses (the cloud metadata service), multicast and the other computers are refused.",
  allowlist: "Only the destinations listed below (and DNS).",
  offline: "Nothing at all, DNS included.",
};

/**
 * One destination a line: a host name, an address or a CIDR block, then its ports if any, e.g.
 * `api.example.com 443,8443`. What else is wrong with a destination the api says, naming it.
 */
export function parseDestinations(text: string): NonNullable<EgressPolicyInput["allow"]> {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => {
      const [host = "", ...rest] = line.split(/\s+/);
      const ports = rest
        .join(",")
        .split(",")
        .filter((port) => port !== "")
        .map((port) => {
          if (!/^\d{1,5}$/.test(port)) throw new Error(`“${port}” (for ${host}) is not a port number.`);
          return Number(port);
        });
      return { host, ports };
    });
}

export const formatDestinations = (allow: EgressPolicyInput["allow"]) =>
  (allow ?? []).map((d) => [d.host, (d.ports ?? []).join(",")].filter(Boolean).join(" ")).join("\n");
