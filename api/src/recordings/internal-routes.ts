import { MAX_CLAIM_ID_LENGTH } from "@cubicle/proxy/capability";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { serviceOnly } from "../internal/service-only.ts";
import { ingestRecording } from "./ingest.ts";

/** The largest offset a part may name (bytes of the recording before it). */
const OFFSET = /^(0|[1-9][0-9]{0,14})$/;

/**
 * Where the proxy streams each recording as its socket lives (not part of the public API), in
 * parts: `POST /internal/recordings/{id}/content?offset=<bytes of records in earlier parts>`
 * (no offset: 0), each body whole records (@cubicle/proxy/recording), only the last ending with
 * END; each part is answered 204 once stored, 507 RECORDING_STORE_FAILED the moment the store
 * cannot keep it, 409 RECORDING_OFFSET_MISMATCH when it does not continue what is stored.
 * Callers prove themselves with a proxy service token; anyone else gets the answer of an unknown
 * path.
 */
export function recordingIngestRoutes() {
  const app = createRouter();
  app.use("/internal/recordings/*", serviceOnly("proxy"));
  app.post("/internal/recordings/:recordingId/content", async (c) => {
    const recordingId = c.req.param("recordingId");
    if (recordingId.length > MAX_CLAIM_ID_LENGTH)
      throw new HttpProblem(400, "VALIDATION_FAILED", "The recording id is too long.");
    if (!c.req.header("content-type")?.startsWith("application/octet-stream"))
      throw new HttpProblem(415, "UNSUPPORTED_MEDIA_TYPE", "Send the records as application/octet-stream.");
    const offset = c.req.query("offset") ?? "0";
    if (!OFFSET.test(offset))
      throw new HttpProblem(400, "VALIDATION_FAILED", "offset must be a whole number of bytes.");
    const { deps } = c.var;
    await ingestRecording(
      { db: deps.database.db, store: deps.recordings.store, logger: deps.logger },
      recordingId,
      Number(offset),
      c.req.raw.body,
    );
    return c.body(null, 204);
  });
  return app;
}
