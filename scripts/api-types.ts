// The api's types (client/src/schema.d.ts: @cubicle/client's, which the dashboard imports too),
// generated from the OpenAPI document a real api serves at /openapi.json. Run `npm run generate:api` after changing a route; a test checks the
// committed file is current.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startTestApi } from "@cubicle/api/testing/harness";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";

export const SCHEMA_FILE = new URL("../client/src/schema.d.ts", import.meta.url);

export async function schemaSource(): Promise<string> {
  const api = await startTestApi();
  try {
    const response = await fetch(`${api.api.url}/openapi.json`);
    if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
    return COMMENT_HEADER + astToString(await openapiTS(await response.json()));
  } finally {
    await api.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA_FILE, await schemaSource());
  console.log(`wrote ${fileURLToPath(SCHEMA_FILE)}`);
}
