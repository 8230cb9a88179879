// Runs the MCP server on its own (`node --import tsx client/src/mcp/main.ts --bot <name>`), as
// `cubicle mcp` does; the test suite starts it this way.
import { runMcp } from "./index.ts";

process.exitCode = await runMcp(process.argv.slice(2));
