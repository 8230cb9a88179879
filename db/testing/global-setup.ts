import type { TestProject } from "vitest/node";
import { startTemporaryPostgres } from "./index.ts";

/** Vitest global setup: one real Postgres server for the whole run, removed afterwards. */
export default async function setup(project: TestProject) {
  const server = await startTemporaryPostgres();
  project.provide("postgresUrl", server.url);
  return () => server.stop();
}
