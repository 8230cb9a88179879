"use client";

import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { COMPUTER_HOST_LABELS, ComputerHostWarning } from "./computer-host.tsx";
import { useHealth } from "./queries.ts";
import styles from "./settings.module.css";

const DIALECTS = { pglite: "embedded Postgres", postgres: "Postgres" } as const;
const STATUS = {
  ok: { label: "Healthy", tone: "ok" },
  degraded: { label: "Degraded: computers cannot be reached", tone: "warn" },
  down: { label: "Unhealthy", tone: "danger" },
} as const;

/** What /health says: the provider computers actually use now (which may differ from the configured one). */
export function SandboxHealth() {
  const health = useHealth();
  return (
    <section className="card stack" aria-labelledby="health-title">
      <h2 id="health-title">Computers and health</h2>
      {health.error ? <ErrorNote error={health.error} prefix="The health check failed" /> : null}
      {health.data ? (
        <>
          <dl className={styles.facts}>
            <dt>Status</dt>
            <dd>
              <span className={`badge ${STATUS[health.data.status].tone}`}>
                {STATUS[health.data.status].label}
              </span>
            </dd>
            <dt>Sandbox provider in use</dt>
            <dd>
              <strong>{health.data.sandbox}</strong>
            </dd>
            <dt>Configured provider</dt>
            <dd>
              <code>SANDBOX_PROVIDER={health.data.configured}</code>
            </dd>
            <dt>Computer host</dt>
            <dd>{health.data.override ? COMPUTER_HOST_LABELS[health.data.override] : "unknown"}</dd>
            <dt>Database</dt>
            <dd>
              {health.data.db === "ok" ? (
                <span className="badge ok">Answering</span>
              ) : (
                <span className="badge danger">Not answering</span>
              )}{" "}
              {DIALECTS[health.data.dbDialect]}
            </dd>
            <dt>Version</dt>
            <dd>{health.data.version}</dd>
          </dl>
          {health.data.providerProblem ? (
            <p className="notice error" role="alert">
              <strong>The provider does not answer:</strong> {health.data.providerProblem}
            </p>
          ) : null}
          {health.data.sandboxNote ? (
            <p className="notice warning" role="note">
              <strong>About the provider:</strong> {health.data.sandboxNote}
            </p>
          ) : null}
          {health.data.override === "this-host" ? <ComputerHostWarning /> : null}
        </>
      ) : health.isPending ? (
        <Loading what="the deployment's health" />
      ) : null}
    </section>
  );
}
