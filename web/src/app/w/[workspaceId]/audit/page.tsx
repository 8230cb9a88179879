"use client";

import { useState } from "react";
import { AuditTrail } from "@/audit/audit-trail.tsx";
import { useMe } from "@/auth/session.ts";
import { PageHeader } from "@/ui/app-shell.tsx";

export default function AuditPage() {
  const me = useMe();
  const [wholeDeployment, setWholeDeployment] = useState(false);
  const owner = me.data?.isDeploymentOwner === true;
  return (
    <>
      <PageHeader
        title="Audit log"
        description="Every change, sign-in, key use and take-over in this workspace: who, what, which object, when and from where."
      />
      {owner ? (
        <label className="choice">
          <input
            type="checkbox"
            checked={wholeDeployment}
            onChange={(e) => setWholeDeployment(e.target.checked)}
          />
          Whole deployment (every workspace, sign-ups and sign-ins too)
        </label>
      ) : null}
      <AuditTrail
        key={wholeDeployment ? "deployment" : "workspace"}
        scope={owner && wholeDeployment ? "deployment" : "workspace"}
        label={wholeDeployment ? "Deployment audit events, newest first" : "Audit events, newest first"}
      />
    </>
  );
}
