import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PROVIDER_KINDS } from "../selection/backends.ts";

// What differs between backends is asked of the backend (its capabilities, screenEnv, launch…) or
// of the selection (usesSupervisor, runsOnThisMachine), never decided elsewhere by comparing a
// provider kind: a new backend must not need edits all over the repository.

const ROOT = join(import.meta.dirname, "..", "..", "..");

const kinds = PROVIDER_KINDS.map((kind) => kind.replace(/[-]/g, "\\-")).join("|");
const PATTERNS = [
  // `x === "docker"`, `"fake" !== x`, `case "desktop":`
  new RegExp(`[!=]==?\\s*["'\`](${kinds})["'\`]`),
  new RegExp(`["'\`](${kinds})["'\`]\\s*[!=]==?`),
  new RegExp(`\\bcase\\s+["'\`](${kinds})["'\`]\\s*:`),
  // two kinds compared with each other: `computer.provider_kind === provider.kind`
  /\b(provider_kind|provider\.kind|providerKind)\s*[!=]==?|[!=]==?\s*[\w.]*\b(provider_kind|provider\.kind|providerKind)\b/,
];

/** `file:line: text` for each line of `text` that compares a provider kind. */
export function kindComparisons(file: string, text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, index) =>
      PATTERNS.some((pattern) => pattern.test(line)) ? [`${file}:${index + 1}: ${line.trim()}`] : [],
    );
}

describe("provider kinds", () => {
  it("are compared only inside the providers package", () => {
    const files = execFileSync("git", ["ls-files", "*.ts", "*.tsx", "*.mjs", "*.js"], {
      cwd: ROOT,
      encoding: "utf8",
    })
      .split("\n")
      .filter((file) => file !== "" && !file.startsWith("providers/") && !file.endsWith(".d.ts"));
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) => kindComparisons(file, readFileSync(join(ROOT, file), "utf8")));
    expect(found, "ask the backend or the selection instead of comparing kinds").toEqual([]);
  });

  it("the check sees each form of comparison", () => {
    const sample = [
      'if (kind === "docker") run();',
      'const remote = "e2b-emulator" !== configured;',
      '  case "desktop":',
      "const ref = computer.provider_kind === provider.kind ? id : null;",
      'if (principal.kind === "user") ok();',
    ].join("\n");
    expect(kindComparisons("sample.ts", sample).map((line) => line.split(":")[1])).toEqual([
      "1",
      "2",
      "3",
      "4",
    ]);
  });
});
