"use client";

import type { ReactNode } from "react";
import { RoleRequired, WithRole } from "@/members/roles.tsx";
import { atLeast } from "@/workspaces/queries.ts";

/**
 * Its children for admins and owners, the only ones who may see recordings (the api's rule); anyone
 * else reads why they are missing, under `before`.
 */
export function AdminsOnly({ before, children }: { before?: ReactNode; children: ReactNode }) {
  return (
    <WithRole>
      {(role) =>
        atLeast(role, "admin") ? (
          children
        ) : (
          <>
            {before}
            <RoleRequired role={role} minimum="admin" action="see recordings" />
          </>
        )
      }
    </WithRole>
  );
}
