import { type Env, settings } from "./config.ts";

/**
 * `cubicle mcp`: the MCP server (client/src/mcp), which reads its credentials from the environment;
 * given here the ones in effect, so a `cubicle login` serves it too (see `settings` for which win).
 * Loaded only when asked for: the MCP SDK is no cost to the other commands' start.
 */
export async function mcp(argv: string[], env: Env): Promise<number> {
  const { url, apiKey, workspace } = await settings(env);
  const effective = { CUBICLE_URL: url, CUBICLE_API_KEY: apiKey, CUBICLE_WORKSPACE: workspace };
  for (const [name, value] of Object.entries(effective)) if (value) process.env[name] = value;
  const { runMcp } = await import("../mcp/index.ts");
  return runMcp(argv);
}
