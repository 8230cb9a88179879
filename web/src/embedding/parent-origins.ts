/**
 * How src/proxy.ts hands the embed page the origins it put in frame-ancestors: a request header it
 * sets (replacing any the browser sent), bare origins separated by spaces as in the CSP.
 */
export const PARENT_ORIGINS_HEADER = "x-cubicle-embed-origins";

export const formatParentOrigins = (origins: readonly string[]) => origins.join(" ");

export function parseParentOrigins(header: string | null): string[] {
  return (header ?? "").split(" ").filter((origin) => origin !== "");
}
