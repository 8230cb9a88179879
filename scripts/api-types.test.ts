import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { SCHEMA_FILE, schemaSource } from "./api-types.ts";

it("has the dashboard's api types generated from the api's current /openapi.json (npm run generate:api)", async () => {
  expect(readFileSync(SCHEMA_FILE, "utf8")).toBe(await schemaSource());
});
