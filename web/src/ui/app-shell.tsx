"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import type { ReactNode } from "react";
import { type Person, useSignOut } from "@/auth/session.ts";
import { WorkspaceSwitcher } from "@/workspaces/workspace-switcher.tsx";
import { ErrorNote } from "./feedback.tsx";
import { ThemeToggle } from "./theme.tsx";

const SECTIONS = [
  { path: "computers", label: "Computers" },
  { path: "bots", label: "Bots" },
  { path: "audit", label: "Audit log" },
  { path: "recordings", label: "Recordings" },
  { path: "members", label: "Members" },
  { path: "api-keys", label: "API keys" },
  { path: "settings", label: "Settings" },
];

/** The frame of every workspace page: navigation, workspace switcher, account, theme. */
export function AppShell({
  me,
  workspaceId,
  children,
}: {
  me: Person;
  workspaceId: string;
  children: ReactNode;
}) {
  const pathname = usePathname();
  const signOut = useSignOut();
  return (
    <div className="shell">
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <aside className="sidebar">
        <div className="brand">Cubicle</div>
        <WorkspaceSwitcher />
        <nav aria-label="Workspace">
          <ul>
            {SECTIONS.map((section) => {
              const href = `/w/${workspaceId}/${section.path}`;
              const current = pathname === href || pathname.startsWith(`${href}/`);
              return (
                <li key={section.path}>
                  <Link href={href} aria-current={current ? "page" : undefined}>
                    {section.label}
                  </Link>
                </li>
              );
            })}
          </ul>
        </nav>
        <div className="sidebar-footer">
          <span className="muted" title={me.email}>
            {me.name}
          </span>
          <ThemeToggle />
          <button type="button" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            Sign out
          </button>
          <ErrorNote error={signOut.error} prefix="Not signed out" />
        </div>
      </aside>
      <main id="content">{children}</main>
    </div>
  );
}

export function PageHeader({
  title,
  description,
  actions,
}: {
  title: string;
  description?: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <div className="page-header">
      <div>
        <h1>{title}</h1>
        {description ? <p>{description}</p> : null}
      </div>
      {actions ? <div className="row">{actions}</div> : null}
    </div>
  );
}
