"use client";

import { BotList } from "@/bots/bot-list.tsx";
import { CreateBotForm } from "@/bots/create-bot-form.tsx";
import { MANAGE_BOTS } from "@/bots/queries.ts";
import { RoleRequired, WithRole } from "@/members/roles.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";
import { atLeast, useWorkspace } from "@/workspaces/queries.ts";

export default function BotsPage() {
  const { workspaceId } = useWorkspace();
  return (
    <>
      <PageHeader
        title="Bots"
        description="Named workers with a charter, each on the Team Computer or its own Private Computer."
      />
      <WithRole>
        {(role) => {
          const canManage = atLeast(role, MANAGE_BOTS);
          return (
            <div className="stack">
              {canManage ? (
                <CreateBotForm workspaceId={workspaceId} />
              ) : (
                <RoleRequired role={role} minimum={MANAGE_BOTS} action="create, switch or archive bots" />
              )}
              <BotList workspaceId={workspaceId} canManage={canManage} />
            </div>
          );
        }}
      </WithRole>
    </>
  );
}
