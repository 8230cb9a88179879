import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { assertHomeKey, COMPUTER_UID, ensureHome, homePath } from "./homes.ts";
import { SupervisorProblem } from "./problems.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempHomes(): string {
  const dir = mkdtempSync(join(tmpdir(), "cubicle-homes-"));
  dirs.push(dir);
  return join(dir, "homes");
}

async function codeOf(run: () => unknown): Promise<string | undefined> {
  try {
    await run();
  } catch (error) {
    if (error instanceof SupervisorProblem) return error.code;
    throw error;
  }
  return undefined;
}

describe("home keys", () => {
  it.each(["a", "team-0b6f4c1e", "bot_123", "A".repeat(128), "9lives"])("accepts %j", (key) => {
    expect(assertHomeKey(key)).toBe(key);
  });

  it.each(["", "-a", "_a", "a.b", "a/b", "..", "a b", "A".repeat(129), "é"])("refuses %j", async (key) => {
    expect(await codeOf(() => assertHomeKey(key))).toBe("INVALID_HOME_KEY");
  });

  it("names a folder directly under the homes folder", () => {
    expect(homePath("/data/homes", "bot-1")).toBe("/data/homes/bot-1");
  });
});

describe("ensureHome", () => {
  it("creates the home once, owned by the computer's user", async () => {
    const homes = tempHomes();
    const first = await ensureHome(homes, "bot-1");
    expect(first).toEqual({ path: join(homes, "bot-1"), created: true });
    if (process.getuid?.() === 0) expect(statSync(first.path).uid).toBe(COMPUTER_UID);
    expect(await ensureHome(homes, "bot-1")).toEqual({ path: join(homes, "bot-1"), created: false });
  });

  it("refuses a home that is a symlink out of the homes folder", async () => {
    const homes = tempHomes();
    mkdirSync(homes, { recursive: true });
    const elsewhere = join(homes, "..", "elsewhere");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(homes, "bot-2"));
    expect(await codeOf(() => ensureHome(homes, "bot-2"))).toBe("HOME_UNAVAILABLE");
  });

  it("refuses a home that is a file", async () => {
    const homes = tempHomes();
    mkdirSync(join(homes, "bot-3", ".."), { recursive: true });
    rmSync(join(homes, "bot-3"), { recursive: true, force: true });
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(homes, "bot-3"), "");
    expect(await codeOf(() => ensureHome(homes, "bot-3"))).toBe("HOME_UNAVAILABLE");
  });
});
