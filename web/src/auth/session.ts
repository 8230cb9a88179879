"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { api, Problem, type Schema, unwrap } from "@/api/client.ts";

export type Me = Schema<"Me">;
export type Person = Extract<Me, { kind: "user" }>;

const meKey = ["me"] as const;

/** Who is signed in: the person, or null when nobody is (401). */
export function useMe() {
  return useQuery({
    queryKey: meKey,
    queryFn: async (): Promise<Person | null> => {
      try {
        const me = await unwrap(api.GET("/v1/me"));
        return me.kind === "user" ? me : null;
      } catch (error) {
        if (error instanceof Problem && error.status === 401) return null;
        throw error;
      }
    },
  });
}

export function useSignOut() {
  const client = useQueryClient();
  const router = useRouter();
  return useMutation({
    mutationFn: () => unwrap(api.POST("/api/auth/sign-out")),
    onSuccess: () => {
      client.clear();
      router.push("/sign-in");
    },
  });
}
