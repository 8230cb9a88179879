// Answered by the api: see forwarding/forward.ts.
export { DELETE, GET, HEAD, PATCH, POST, PUT } from "@/forwarding/route-handlers.ts";
