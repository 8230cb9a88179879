import { forwardToApi } from "@/forwarding/forward.ts";

// Answered by the api: see forwarding/forward.ts.
export const dynamic = "force-dynamic";
export const GET = forwardToApi;
export const POST = forwardToApi;
export const PUT = forwardToApi;
export const PATCH = forwardToApi;
export const DELETE = forwardToApi;
export const HEAD = forwardToApi;
