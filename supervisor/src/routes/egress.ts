import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";
import { EgressPolicySchema, unenforceable } from "../egress/policy.ts";
import { SupervisorProblem } from "../problems.ts";
import { computerRef, jsonBody } from "./params.ts";

const CURSOR = /^[0-9a-f]{8}\.\d{1,15}$/;

/**
 * A computer's egress policy: `PUT` replaces it (a running computer's rules are in place when it
 * answers 204); `GET ?after=<cursor>` gives it with the refusals counted and those after the cursor.
 */
export function egressRoutes(manager: ContainerManager) {
  return new Hono()
    .put("/computers/:homeKey/egress", async (c) => {
      const ref = computerRef(c);
      const policy = await jsonBody(c, EgressPolicySchema);
      const beyond = unenforceable(policy);
      if (beyond) throw new SupervisorProblem("EGRESS_UNSUPPORTED", beyond);
      await manager.setEgress(ref, policy);
      return c.body(null, 204);
    })
    .get("/computers/:homeKey/egress", async (c) => {
      const ref = computerRef(c);
      const after = c.req.query("after") || null;
      if (after !== null && !CURSOR.test(after)) {
        throw new SupervisorProblem("INVALID_REQUEST", "after: a cursor from an earlier answer", {
          errors: [{ path: "after", message: "a cursor from an earlier answer" }],
        });
      }
      return c.json(await manager.egress(ref, after));
    });
}
