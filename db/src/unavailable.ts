/**
 * Whether `error` says the database server could not be reached or went away (rather than that a
 * statement was wrong): such a failure is expected to pass, so callers may ask again later.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (UNREACHABLE_SOCKET.has(code) || isServerGoingAway(code))) return true;
  // node-postgres reports a connection that broke, or never came, with these messages and no code
  if (DRIVER_MESSAGES.some((message) => error.message.startsWith(message))) return true;
  const causes = error instanceof AggregateError ? error.errors : [];
  return [error.cause, ...causes].some(isDatabaseUnavailable);
}

/** SQLSTATE class 08 (connection exception), and the server shutting down, crashed, or starting. */
function isServerGoingAway(sqlState: string): boolean {
  return /^08[0-9A-Z]{3}$/.test(sqlState) || ["57P01", "57P02", "57P03"].includes(sqlState);
}

const UNREACHABLE_SOCKET = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

const DRIVER_MESSAGES = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
];
