// The workspace packages form layers: a package is reached only through its name and its
// package.json `exports` (`@cubicle/api/testing`, never `../api/test/...`), and no two packages
// depend on each other, even through others or only in their tests. This test reads every import
// of every tracked source file with TypeScript's own pre-processor and fails on a cycle between
// packages or on a relative import that leaves its package.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { root } from "./lib/run.mjs";

/**
 * The repository's own tooling: the plain Node scripts of `npm start`, `npm test` and the images.
 * They run before `npm ci`, when no package can be resolved by name, so they alone may import a
 * package's plain files by path; tests and build scripts may import them by path in turn.
 */
const TOOLING = "scripts/lib/";

/** Every module specifier a file imports, re-exports or loads with `import()`. */
function importsOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((file) => file.fileName);
}

interface Workspace {
  name: string;
  folder: string;
}

/** The folder (a workspace's, or null for the root's own files) that holds `file`. */
function ownerOf(workspaces: Workspace[], file: string): Workspace | null {
  return workspaces.find(({ folder }) => file.startsWith(`${folder}/`)) ?? null;
}

/** The package a specifier names: `@cubicle/api/testing/world` → `@cubicle/api`. */
function packageNamed(specifier: string): string {
  const [scope, name] = specifier.split("/");
  return specifier.startsWith("@") ? `${scope}/${name}` : (scope ?? specifier);
}

interface ImportFinding {
  /** `a → b` edges between workspace packages, each with one file that makes it. */
  edges: Map<string, Map<string, string>>;
  /** `file → target` for relative imports that leave the file's package. */
  stray: string[];
}

/** The package graph of `files` (path → source) and the relative imports that leave a package. */
function findImports(workspaces: Workspace[], files: Map<string, string>): ImportFinding {
  const names = new Set(workspaces.map(({ name }) => name));
  const edges = new Map<string, Map<string, string>>(workspaces.map(({ name }) => [name, new Map()]));
  const stray: string[] = [];
  for (const [file, source] of files) {
    const owner = ownerOf(workspaces, file);
    for (const specifier of importsOf(source)) {
      if (specifier.startsWith(".")) {
        const target = normalize(join(dirname(file), specifier));
        const targetOwner = ownerOf(workspaces, target);
        const leaves = targetOwner?.folder !== owner?.folder;
        if (leaves && !target.startsWith(TOOLING) && !file.startsWith(TOOLING))
          stray.push(`${file} → ${target}`);
        continue;
      }
      const named = packageNamed(specifier);
      if (owner && names.has(named) && named !== owner.name && !edges.get(owner.name)?.has(named))
        edges.get(owner.name)?.set(named, file);
    }
  }
  return { edges, stray };
}

/** Each cycle of the graph once, as `a → b → … → a` with the file that makes each step. */
function cyclesOf(edges: Map<string, Map<string, string>>): string[] {
  const cycles: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (node: string) => {
    const at = path.indexOf(node);
    if (at >= 0) {
      const loop = [...path.slice(at), node];
      cycles.push(
        loop
          .map((name, i) => (i === 0 ? name : `→ ${name} (${edges.get(loop[i - 1] ?? "")?.get(name)})`))
          .join(" "),
      );
      return;
    }
    if (done.has(node)) return;
    path.push(node);
    for (const next of edges.get(node)?.keys() ?? []) visit(next);
    path.pop();
    done.add(node);
  };
  for (const node of edges.keys()) visit(node);
  return cycles;
}

function repository(): { workspaces: Workspace[]; files: Map<string, string> } {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces: string[] };
  const workspaces = manifest.workspaces.map((folder) => ({
    folder,
    name: (JSON.parse(readFileSync(join(root, folder, "package.json"), "utf8")) as { name: string }).name,
  }));
  const tracked = execFileSync("git", ["ls-files", "*.ts", "*.tsx", "*.mts", "*.mjs", "*.js", "*.cjs"], {
    cwd: root,
    encoding: "utf8",
  });
  const files = new Map(
    tracked
      .split("\n")
      .filter((file) => file !== "" && !file.endsWith(".d.ts") && !file.endsWith(".d.mts"))
      .map((file) => [file, readFileSync(join(root, file), "utf8")]),
  );
  return { workspaces, files };
}

describe("package imports", () => {
  const { workspaces, files } = repository();
  const found = findImports(workspaces, files);

  it("reads the whole repository", () => {
    expect(workspaces.length).toBeGreaterThan(10);
    expect(files.size).toBeGreaterThan(500);
    const edgeCount = [...found.edges.values()].reduce((sum, targets) => sum + targets.size, 0);
    expect(edgeCount, "packages that import other packages").toBeGreaterThan(20);
  });

  it("form no cycle between packages", () => {
    expect(cyclesOf(found.edges), "a package reached back by one it depends on").toEqual([]);
  });

  it("reach another package only through its name, never by a relative path", () => {
    expect(found.stray, "import these through the package's exports").toEqual([]);
  });

  it("the checks see what they look for", () => {
    const sample = new Map([
      ["a/src/x.ts", 'import { b } from "@cubicle/b/testing";\nexport * from "./y.ts";'],
      ["b/src/y.ts", 'const c = await import("@cubicle/c");\nimport "../../a/test/support/z.ts";'],
      [
        "c/test/z.ts",
        'import type { A } from "@cubicle/a";\nimport { run } from "../../scripts/lib/run.mjs";',
      ],
      ["scripts/w.ts", 'import { s } from "../b/src/y.ts";'],
      ["scripts/lib/v.mjs", 'import { t } from "../../c/t.mjs";'],
    ]);
    const spaces = ["a", "b", "c"].map((folder) => ({ folder, name: `@cubicle/${folder}` }));
    const sampleFound = findImports(spaces, sample);
    expect(sampleFound.stray).toEqual(["b/src/y.ts → a/test/support/z.ts", "scripts/w.ts → b/src/y.ts"]);
    expect(cyclesOf(sampleFound.edges)).toEqual([
      "@cubicle/a → @cubicle/b (a/src/x.ts) → @cubicle/c (b/src/y.ts) → @cubicle/a (c/test/z.ts)",
    ]);
  });
});
