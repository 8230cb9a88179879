import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson } from "./body.ts";

/** A route's answer: its status, and its JSON body unless it has none. */
export type Answer = [status: number, body?: unknown];
export type Handler<C> = (context: C, req: IncomingMessage, match: string[]) => Promise<Answer>;
export type Route<C> = [method: string, path: RegExp, handler: Handler<C>];

/**
 * Answers with the first route of the request's method whose pattern matches `path`, given the
 * pattern's groups; a handler's error is answered as `failure` says, in the vendor's error shape.
 * False when no route matches, so the vendor answers its own 404.
 */
export async function serveRoutes<C>(
  routes: Route<C>[],
  context: C,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
  failure: (error: unknown) => Required<Answer>,
): Promise<boolean> {
  for (const [method, pattern, handler] of routes) {
    const match = pattern.exec(path);
    if (!match || req.method !== method) continue;
    try {
      const [status, body] = await handler(context, req, match.slice(1));
      if (body === undefined) res.writeHead(status).end();
      else sendJson(res, status, body);
    } catch (error) {
      sendJson(res, ...failure(error));
    }
    return true;
  }
  return false;
}
