// Builds dist/cubicle-screen.js: the element, noVNC and the embedding page's side of the iframe
// protocol in one ES module, for pages without a bundler. `node viewer/build.mjs [outdir]`.
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = fileURLToPath(new URL(".", import.meta.url));

/** Writes `cubicle-screen.js` into `outdir` (default viewer/dist) and returns its path. */
export async function buildViewer({ outdir = resolve(here, "dist") } = {}) {
  const outfile = resolve(outdir, "cubicle-screen.js");
  await build({
    entryPoints: [resolve(here, "src/standalone.ts")],
    outfile,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "eof",
    logLevel: "warning",
  });
  return outfile;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outfile = await buildViewer(process.argv[2] ? { outdir: resolve(process.argv[2]) } : {});
  console.log(`built ${outfile}`);
}
