#!/usr/bin/env node
// `cubicle-supervisor`: the supervisor as its own program, as `npm start -w @cubicle/supervisor`
// and the service image run it. Its source is TypeScript, loaded through tsx (a dependency of this
// package). Its environment is its configuration (src/config.ts); once it listens it prints one
// line on stdout, `cubicle supervisor listening on <url>`, and SIGTERM or SIGINT stop it.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
