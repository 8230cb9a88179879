"use client";

import { useState } from "react";
import { ApiKeyList } from "@/api-keys/api-key-list.tsx";
import { CreateApiKeyForm } from "@/api-keys/create-api-key-form.tsx";
import { NewKeyBox } from "@/api-keys/new-key-box.tsx";
import { type CreatedApiKey, USE_API_KEYS } from "@/api-keys/queries.ts";
import { RoleRequired, WithRole } from "@/members/roles.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";
import { atLeast, useWorkspace } from "@/workspaces/queries.ts";

export default function ApiKeysPage() {
  const { workspaceId } = useWorkspace();
  // Held here, not in the form, so the secret stays on screen until the person says it is stored.
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys that automations send to call the api. Admins see every key of the workspace; members see their own."
      />
      <WithRole>
        {(role) =>
          atLeast(role, USE_API_KEYS) ? (
            <div className="stack">
              {created ? <NewKeyBox created={created} onDone={() => setCreated(null)} /> : null}
              <CreateApiKeyForm workspaceId={workspaceId} callerRole={role} onCreated={setCreated} />
              <ApiKeyList workspaceId={workspaceId} seesAll={atLeast(role, "admin")} />
            </div>
          ) : (
            <RoleRequired role={role} minimum={USE_API_KEYS} action="create or see API keys" />
          )
        }
      </WithRole>
    </>
  );
}
