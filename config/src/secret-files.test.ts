import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { withSecretFiles } from "./index.ts";

const dir = mkdtempSync(join(tmpdir(), "cubicle-secret-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, contents: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, contents);
  return path;
};

describe("withSecretFiles", () => {
  it("reads each <NAME>_FILE into <NAME>, without the trailing newline, and leaves the rest alone", () => {
    const { env, problems } = withSecretFiles(
      {
        TOKEN_FILE: file("token", "s3cret-token-value\n"),
        KEY_FILE: ` ${file("key", "key with inner  spaces\r\n")} `,
        OTHER: "kept",
        UNLISTED_FILE: "/not/read",
      },
      ["TOKEN", "KEY", "ABSENT"],
    );
    expect(problems).toEqual([]);
    expect(env).toEqual({
      TOKEN: "s3cret-token-value",
      KEY: "key with inner  spaces",
      OTHER: "kept",
      UNLISTED_FILE: "/not/read",
    });
  });

  it("names the variable and the path of each file it cannot use, never its contents", () => {
    const secret = "the-value-that-must-not-be-printed";
    const { env, problems } = withSecretFiles(
      {
        MISSING_FILE: join(dir, "nope"),
        EMPTY_FILE: file("empty", "\n"),
        FOLDER_FILE: dir,
        BOTH: secret,
        BOTH_FILE: file("both", secret),
        HUGE_FILE: file("huge", Buffer.alloc(65 * 1024, 97)),
      },
      ["MISSING", "EMPTY", "FOLDER", "BOTH", "HUGE"],
    );
    expect(problems).toEqual([
      `MISSING_FILE: cannot read ${join(dir, "nope")} (no such file)`,
      `EMPTY_FILE: ${join(dir, "empty")} is empty`,
      `FOLDER_FILE: cannot read ${dir} (a directory)`,
      "BOTH and BOTH_FILE are both set; keep one",
      `HUGE_FILE: cannot read ${join(dir, "huge")} (over 64 KiB: not a secret file)`,
    ]);
    expect(JSON.stringify(problems)).not.toContain(secret);
    expect(env.MISSING).toBeUndefined();
    expect(env.EMPTY).toBeUndefined();
  });
});
