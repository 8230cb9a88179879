// The api's periodic jobs as other packages' tests see them (`@cubicle/api/housekeeping`): the
// advisory lock a job takes so that one replica runs it at a time, and how often the expiry jobs run.

export { CONTROL_EXPIRY_EVERY_MS } from "../screens/control-expiry.ts";
export { SESSION_EXPIRY_EVERY_MS } from "../sessions/expiry.ts";
export { lockKeyOf } from "./periodic-job.ts";
