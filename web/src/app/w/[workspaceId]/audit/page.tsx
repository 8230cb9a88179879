"use client";

import { AuditTrail } from "@/audit/audit-trail.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";

export default function AuditPage() {
  return (
    <>
      <PageHeader
        title="Audit log"
        description="Every change, sign-in, key use and take-over in this workspace: who, what, which object, when and from where."
      />
      <AuditTrail />
    </>
  );
}
