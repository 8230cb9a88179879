import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// Test doubles (the fake provider, and next the vendor emulators) live under testing/ folders and
// are loaded only when a test kind is asked for: production start-up must never import them.

const ROOT = join(import.meta.dirname, "..", "..", "..");

/** Tests, test support, the end-to-end and reliability suites, benchmarks and the type generator may use doubles; nothing else. */
function isProductionSource(file: string): boolean {
  if (!/\.(ts|tsx|mjs|js)$/.test(file) || file.endsWith(".d.ts") || /\.test\.tsx?$/.test(file)) return false;
  if (/(^|\/)(test|testing)\//.test(file)) return false;
  return !["bench/", "e2e/", "reliability/", "scripts/api-types.ts"].some((prefix) =>
    file.startsWith(prefix),
  );
}

const IMPORT = /(?:from\s+|import\s*\(\s*)["']([^"']+)["']/g;

describe("test doubles", () => {
  it("are imported by no production source, except the fake backend's lazy import when it is built", () => {
    const files = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
      .split("\n")
      .filter(isProductionSource);
    expect(files).toContain("providers/src/selection/backends.ts");
    const found = files.flatMap((file) =>
      [...readFileSync(join(ROOT, file), "utf8").matchAll(IMPORT)]
        .map((match) => match[1] ?? "")
        .filter((specifier) => /(^|\/)testing(\/|$)/.test(specifier))
        .map((specifier) => `${file} imports ${specifier}`),
    );
    expect(found).toEqual(["providers/src/selection/backends.ts imports ../../testing/fake/index.ts"]);
    const backends = readFileSync(join(ROOT, "providers/src/selection/backends.ts"), "utf8");
    expect(backends, "the fake is loaded lazily, when it is built").toMatch(
      /async build\(\) \{\s+const \{ createFakeProvider \} = await import\("\.\.\/\.\.\/testing\/fake\/index\.ts"\);/,
    );
  });
});
