import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Hono } from "hono";
import type { AppEnv } from "../context.ts";

/**
 * The interactive API reference, served from the installed swagger-ui-dist package so that it
 * works on a machine with no internet access.
 */
export function referenceRoutes(openApiPath: string) {
  const assetDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  const asset = (file: string) => readFileSync(join(assetDir, file));
  const css = asset("swagger-ui.css");
  const bundle = asset("swagger-ui-bundle.js");
  const init = `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(openApiPath)}, dom_id: "#reference", withCredentials: true });`;
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cubicle API reference</title>
<link rel="stylesheet" href="/reference/swagger-ui.css">
</head>
<body>
<main id="reference"></main>
<script src="/reference/swagger-ui-bundle.js"></script>
<script src="/reference/init.js"></script>
</body>
</html>`;
  return new Hono<AppEnv>()
    .get("/reference", (c) => c.html(page))
    .get("/reference/swagger-ui.css", (c) => c.body(css, 200, { "content-type": "text/css; charset=utf-8" }))
    .get("/reference/swagger-ui-bundle.js", (c) =>
      c.body(bundle, 200, { "content-type": "text/javascript; charset=utf-8" }),
    )
    .get("/reference/init.js", (c) =>
      c.body(init, 200, { "content-type": "text/javascript; charset=utf-8" }),
    );
}
