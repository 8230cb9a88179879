import { forwardToApi } from "./forward.ts";

// Every method of the paths the api answers (app/v1, app/api, app/health re-export these).
export const GET = forwardToApi;
export const POST = forwardToApi;
export const PUT = forwardToApi;
export const PATCH = forwardToApi;
export const DELETE = forwardToApi;
export const HEAD = forwardToApi;
