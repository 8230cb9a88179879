"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, problemOf, type Schema, unwrap } from "@/api/client.ts";

type Health = Schema<"Health">;
export type DeploymentSettings = Schema<"DeploymentSettings">;
export type ComputerHost = DeploymentSettings["computerHost"];

const healthKey = ["health"] as const;
const deploymentSettingsKey = ["deployment-settings"] as const;

export function useHealth() {
  return useQuery({
    queryKey: healthKey,
    queryFn: async (): Promise<Health> => {
      const { data, error, response } = await api.GET("/health");
      if (data) return data;
      // 503 still describes the deployment (its database does not answer), which is worth showing.
      if (response.status === 503 && error) return error;
      throw await problemOf(response, error);
    },
    refetchInterval: 30_000,
  });
}

/** Only the deployment owner may read these (the api answers 403 to anyone else). */
export function useDeploymentSettings() {
  return useQuery({
    queryKey: deploymentSettingsKey,
    queryFn: () => unwrap(api.GET("/v1/deployment/settings")),
  });
}

export function useUpdateDeploymentSettings() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Schema<"UpdateDeploymentSettings">) =>
      unwrap(api.PATCH("/v1/deployment/settings", { body })),
    onSuccess: (settings) => {
      client.setQueryData(deploymentSettingsKey, settings);
      // The computer host decides the provider /health reports as in use.
      return client.invalidateQueries({ queryKey: healthKey });
    },
  });
}
