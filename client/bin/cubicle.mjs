#!/usr/bin/env node
// The `cubicle` CLI: its source is TypeScript, loaded through tsx (a dependency of this package).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
// exitCode, not exit(): what is still being written to stdout gets out first
process.exitCode = await main(process.argv.slice(2));
