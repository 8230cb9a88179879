import type { MachineRef, ProviderErrorCode, SandboxProvider } from "@cubicle/providers/contract";
import { shellQuote } from "@cubicle/providers/kernel";
import { box, daytona, desktop, docker, e2b, fake } from "@cubicle/providers/testing/backends";
import {
  bytes,
  collectRun,
  expectProviderError,
  Machines,
  type MakeProvider,
  type ProviderUnderTest,
} from "@cubicle/providers/testing/suites";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { tally } from "../../src/tally.ts";

/**
 * Hostile paths on every provider: what a bot can type as a path, and what it can make with the
 * shell and then hand to the file tools. Each backend gets one machine, made once; every case
 * ends by checking that the home's own files are still there, byte for byte.
 */

/** Cases a backend may be excused from, each with the reason it cannot apply. */
type PathsException =
  /** Links and names the shell makes on a real filesystem. */
  | "links-made-by-the-shell"
  /** A hard link from the home to a file outside it. */
  | "hard-link-outside-home";

interface Backend {
  name: string;
  make: MakeProvider;
  exceptions: Partial<Record<PathsException, string>>;
}

const BACKENDS: Backend[] = [
  {
    name: "fake",
    make: fake,
    exceptions: {
      "links-made-by-the-shell":
        "its home is an in-memory tree of files and folders, and its shell has no ln, so nothing in it can lead out",
      "hard-link-outside-home": "its shell has no ln and nothing exists outside its in-memory home",
    },
  },
  { name: "desktop", make: desktop, exceptions: {} },
  {
    name: "docker",
    make: docker,
    exceptions: {
      "hard-link-outside-home":
        "the home is a bind mount of its own, so every file outside it is on another filesystem and ln fails with EXDEV",
    },
  },
  { name: "e2b-emulator", make: e2b, exceptions: {} },
  { name: "daytona-emulator", make: daytona, exceptions: {} },
  { name: "box-emulator", make: box, exceptions: {} },
];

const FAMILY = "hostile: paths";
const OUTSIDE = "path is outside this computer's home";
/** Remote backends pay a vendor round trip per call. */
const CASE_MS = 120_000;

/** Files the home holds before every case, and must still hold, unchanged, after it. */
const KEEPERS: Record<string, Uint8Array> = {
  "keep/notes.txt": bytes("notes that must survive\n"),
  "keep/all-bytes.bin": new Uint8Array(256).map((_, i) => i),
  "keep/deep/er/still.txt": bytes("deep\n"),
};

/** Climbing out, absolute, backslash and NUL spellings: PATH_OUTSIDE_HOME at every file tool. */
const OUTSIDE_PATHS = [
  "..",
  "../",
  "../x",
  "./../x",
  "a/../../x",
  "a/b/../../../x",
  "keep/../../keep/notes.txt",
  "/etc/passwd",
  "//etc/passwd",
  "/",
  "/proc/self/environ",
  "a\\b",
  "..\\x",
  "\\etc\\passwd",
  "a\0b",
  "\0",
  "notes.txt\0.png",
];

const bytesOf = (text: string) => Buffer.byteLength(text, "utf8");

/** Past Linux's limits (a name of 255 bytes, a path of 4095 and its NUL), or not Unicode text: INVALID_PATH. */
const INVALID_PATHS = [
  "n".repeat(256),
  "é".repeat(128),
  `dir/${"n".repeat(256)}/x`,
  Array.from({ length: 41 }, () => "d".repeat(99)).join("/"),
  "p".repeat(1 << 20),
  "lone-\uD800",
  "\uDC00-low-first",
  "ok/\uDFFF",
];

/**
 * Odd but valid names: each must be written, listed, read and removed under exactly its name. Kinds
 * that cannot change one another's fate share a name, so a remote backend makes few round trips.
 */
const ODD_NAMES = [
  // Linux keeps bytes, never a normal form: two names that look alike are two files
  "é-nfc.txt",
  "e\u0301-nfd.txt",
  "\u202Etxt.exe שלום 😀\u00A0nbsp\uFEFFbom\u200Bzero-width",
  "line\nbreak\ttab\rcr",
  "\x01control\x1f\x7f",
  "-rf",
  " lead and trail ",
  `$(touch pwned) \`touch pwned\` it's "q" a;b|c&d>e<f`,
  "*",
  "~?[ab]{c,d}",
  "...",
  "..a",
  ".. ",
  "%2e%2e",
  "..%2f..%2fetc%2fpasswd",
  "m".repeat(255),
  `${"é".repeat(127)}x`,
];

/** A path of 4095 bytes below `odd/`: as long as Linux takes. */
const LONGEST_PATH = (() => {
  const folders = Array.from({ length: 20 }, () => "d".repeat(200)).join("/");
  return `${folders}/${"f".repeat(4095 - bytesOf("odd/") - bytesOf(folders) - 1)}`;
})();

/** Spellings that name a place in the home other than literally: [as written, where it lands]. */
const SAME_PLACE = [
  ["dbl//slash.txt", "dbl/slash.txt"],
  ["./dot/./x.txt", "dot/x.txt"],
  ["trail.txt/", "trail.txt"],
  ["sub/../back.txt", "back.txt"],
  ["sub/./..//sub2/../twice.txt", "twice.txt"],
] as const;

describe.each(BACKENDS)("hostile paths: $name", ({ name, make, exceptions }) => {
  const unlessExcused = (exception: PathsException, register: () => void) => {
    if (exceptions[exception] === undefined) register();
  };
  let put: ProviderUnderTest | undefined;
  const provider = (): SandboxProvider => {
    if (!put) throw new Error(`${name}: the provider was not made`);
    return put.provider;
  };
  const machines = new Machines(provider);
  let ref: MachineRef;

  const shell = async (command: string) => {
    const run = await collectRun(provider(), ref, { command, timeoutMs: 30_000 });
    return { ...run, code: run.exit.code };
  };

  /** The keepers that are gone or changed. */
  const missingKeepers = async (): Promise<string[]> => {
    const missing: string[] = [];
    for (const [path, data] of Object.entries(KEEPERS)) {
      const now = await provider()
        .readFile(ref, path, { maxBytes: 1_000 })
        .catch(() => null);
      if (!now || !Buffer.from(now).equals(Buffer.from(data))) missing.push(path);
    }
    return missing;
  };

  /** Every attempt refused with `code`; counts what it tried and what was refused. */
  const expectAllRefused = async (
    context: TestContext,
    attempts: [label: string, attempt: () => Promise<unknown>][],
    code: ProviderErrorCode,
    message?: string,
  ) => {
    const counts = tally(context, FAMILY);
    counts.tried(attempts.length);
    // refusals are answered before anything reaches the machine, or by one small helper run each
    const outcomes = await Promise.allSettled(
      attempts.map(([label, attempt]) => expectProviderError(attempt, code, message, label)),
    );
    const failures = outcomes.flatMap((outcome) =>
      // a provider's message repeats the path, a megabyte for the longest: the start is enough
      outcome.status === "rejected" ? [String((outcome.reason as Error).message).slice(0, 300)] : [],
    );
    counts.refused(attempts.length - failures.length);
    expect(failures, `every attempt refused with ${code}`).toEqual([]);
  };

  /** The five file-tool entry points, each given `path`. */
  const everyEntryPoint = (path: string): [string, () => Promise<unknown>][] => {
    const p = provider();
    const shown = JSON.stringify(path.length > 60 ? `${path.slice(0, 60)}…(${bytesOf(path)} bytes)` : path);
    return [
      [`listFiles(${shown})`, () => p.listFiles(ref, path)],
      [`readFile(${shown})`, () => p.readFile(ref, path, { maxBytes: 1_000 })],
      [`writeFile(${shown})`, () => p.writeFile(ref, path, bytes("escaped"))],
      [`deleteFile(${shown})`, () => p.deleteFile(ref, path)],
      [`run cwd ${shown}`, () => collectRun(p, ref, { command: "pwd", cwd: path, timeoutMs: 10_000 })],
    ];
  };

  beforeAll(async () => {
    put = await make();
    ref = await machines.shared();
    for (const [path, data] of Object.entries(KEEPERS)) await provider().writeFile(ref, path, data);
  }, 4 * CASE_MS);
  afterAll(async () => {
    await machines.destroyAll({ shared: true });
    await put?.cleanup();
  }, CASE_MS);

  it(
    "refuses paths that climb out, are absolute, or hold a backslash or NUL, at every file tool",
    async (context) => {
      await expectAllRefused(context, OUTSIDE_PATHS.flatMap(everyEntryPoint), "PATH_OUTSIDE_HOME", OUTSIDE);
      tally(context, FAMILY).lost(await missingKeepers());
    },
    CASE_MS,
  );

  it(
    "refuses names past 255 bytes, paths past 4095 bytes and text that is not Unicode as INVALID_PATH",
    async (context) => {
      await expectAllRefused(context, INVALID_PATHS.flatMap(everyEntryPoint), "INVALID_PATH");
      const listed = (await provider().listFiles(ref, "")).map((entry) => entry.name);
      expect(
        listed.filter((n) => n.startsWith("lone-") || n.endsWith("-low-first") || n.length > 255),
      ).toEqual([]);
      tally(context, FAMILY).lost(await missingKeepers());
    },
    CASE_MS,
  );

  it(
    "refuses a working folder that is missing or is a file, rather than running the command elsewhere",
    async (context) => {
      const p = provider();
      const counts = tally(context, FAMILY);
      const at = (cwd: string) => () => collectRun(p, ref, { command: "pwd", cwd, timeoutMs: 10_000 });
      await expectAllRefused(
        context,
        [
          ["run cwd missing", at("missing-folder")],
          ["run cwd keep/missing", at("keep/missing")],
        ],
        "FILE_NOT_FOUND",
      );
      await expectAllRefused(context, [["run cwd a file", at("keep/notes.txt")]], "NOT_A_DIRECTORY");
      counts.tried();
      const inside = await collectRun(p, ref, {
        command: "cat still.txt",
        cwd: "keep//deep/./er/",
        timeoutMs: 10_000,
      });
      expect(inside.stdout).toBe("deep\n");
      counts.lost(await missingKeepers());
    },
    CASE_MS,
  );

  it(
    "takes percent-encodings literally and doubled, dotted and trailing separators as the place they name",
    async (context) => {
      const p = provider();
      const counts = tally(context, FAMILY);
      for (const [written, lands] of SAME_PLACE) {
        counts.tried();
        await p.writeFile(ref, `same/${written}`, bytes(`at ${lands}\n`));
        expect(
          Buffer.from(await p.readFile(ref, `same/${lands}`, { maxBytes: 1_000 })).toString(),
          `${written} lands at ${lands}`,
        ).toBe(`at ${lands}\n`);
      }
      // the shell sees the names as written to disk: percent-encodings are never decoded
      const cat = await shell(
        `cat ${SAME_PLACE.map(([, lands]) => shellQuote(`./same/${lands}`)).join(" ")}`,
      );
      expect(cat.stdout).toBe(SAME_PLACE.map(([, lands]) => `at ${lands}\n`).join(""));
      await p.deleteFile(ref, "same");
      tally(context, FAMILY).lost(await missingKeepers());
    },
    CASE_MS,
  );

  it(
    "writes, lists, reads and removes odd but valid names under exactly their names, the longest included",
    async (context) => {
      const p = provider();
      const counts = tally(context, FAMILY);
      const paths = [...ODD_NAMES.map((n) => `odd/${n}`), `odd/${LONGEST_PATH}`];
      expect(bytesOf(`odd/${LONGEST_PATH}`)).toBe(4095);
      counts.tried(paths.length);
      const content = (i: number) => bytes(`odd ${i}\n`);
      await Promise.all(paths.map((path, i) => p.writeFile(ref, path, content(i))));

      const listed = (await p.listFiles(ref, "odd")).map((entry) => entry.name).sort();
      expect(listed, "each name listed exactly as written").toEqual(
        [...ODD_NAMES, LONGEST_PATH.split("/")[0]].sort(),
      );
      const readBack = await Promise.all(
        paths.map(async (path, i) => {
          const data = await p.readFile(ref, path, { maxBytes: 1_000 });
          return Buffer.from(data).equals(Buffer.from(content(i))) ? null : path;
        }),
      );
      expect(readBack.filter((path) => path !== null)).toEqual([]);
      // the shell finds every file under the same name: nothing was re-encoded on the way to disk
      const cat = await shell(`cat ${paths.map((path) => shellQuote(path)).join(" ")}`);
      expect(cat.stderr).toBe("");
      expect(cat.stdout).toBe(paths.map((_, i) => `odd ${i}\n`).join(""));
      // names that look like shell syntax were never run as it
      await expectProviderError(p.readFile(ref, "odd/pwned", { maxBytes: 10 }), "FILE_NOT_FOUND");
      await expectProviderError(p.readFile(ref, "pwned", { maxBytes: 10 }), "FILE_NOT_FOUND");

      await Promise.all(paths.map((path) => p.deleteFile(ref, path)));
      await p.deleteFile(ref, `odd/${LONGEST_PATH.split("/")[0]}`);
      expect(await p.listFiles(ref, "odd")).toEqual([]);
      await p.deleteFile(ref, "odd");
      tally(context, FAMILY).lost(await missingKeepers());
    },
    CASE_MS,
  );

  unlessExcused("links-made-by-the-shell", () => {
    it(
      "lists a name the shell made that is not UTF-8 without failing, and leaves the file whole",
      async (context) => {
        const p = provider();
        const counts = tally(context, FAMILY);
        const made = await shell(`mkdir -p raw && printf kept > "raw/$(printf 'bad-\\377-name')"`);
        expect(made.code, made.stderr).toBe(0);
        counts.tried();
        const entries = await p.listFiles(ref, "raw");
        expect(entries).toHaveLength(1);
        expect(entries[0]?.name).toMatch(/^bad-.+-name$/);
        // no UTF-8 text names it, so the file tools cannot reach it by the name they were shown
        const listedName = entries[0]?.path ?? "";
        counts.tried();
        await expectProviderError(p.readFile(ref, listedName, { maxBytes: 100 }), "FILE_NOT_FOUND");
        counts.refused();
        const still = await shell(`cat "raw/$(printf 'bad-\\377-name')"`);
        counts.lost(still.stdout === "kept" ? [] : ["raw/bad-\\377-name"]);
        await p.deleteFile(ref, "raw");
        tally(context, FAMILY).lost(await missingKeepers());
      },
      CASE_MS,
    );

    it(
      "refuses every link the shell made out of the home, at every file tool, and never touches what it leads to",
      async (context) => {
        const p = provider();
        const counts = tally(context, FAMILY);
        await p.writeFile(ref, "target.txt", bytes("inside target\n"));
        // our own files outside the home stand in for what a link must never reach: the host's
        // /etc is only ever read here (the desktop backend runs as this host's user)
        const made = await shell(`set -e
out=$(mktemp -d /tmp/cubicle-outside-XXXXXX)
printf 'outside secret\\n' > "$out/secret.txt"
rm -rf links && mkdir -p links/inner && cd links
ln -s /etc/passwd passwd
ln -s /proc/self/environ environ
ln -s /proc/1/environ init-environ
ln -s "$out" outside-dir
ln -s "$out/secret.txt" outside-file
ln -s "$out/new.txt" dangling
ln -s ../../../../../../../../../etc/passwd climbing
ln -s / root
ln -s /proc/self/root proc-root
ln -s /proc/self/cwd proc-cwd
ln -s loop-b loop-a
ln -s loop-a loop-b
ln -s .. up
ln -s up/.. sneaky
ln -s "$HOME/.." home-parent
ln -s ../outside-dir inner/via
ln -s ../target.txt inside-rel
ln -s "$HOME/target.txt" inside-abs
printf '%s\\n' "$out"
cksum < /etc/passwd`);
        expect(made.code, made.stderr).toBe(0);
        const [out, passwdSum] = made.stdout.trim().split("\n");
        const outsideState = async () =>
          (
            await shell(
              `cat ${out}/secret.txt; ls -A ${out}; ls -A "$HOME/.." | grep -c escaped; cksum < /etc/passwd`,
            )
          ).stdout;
        const before = await outsideState();
        expect(before).toBe(`outside secret\nsecret.txt\n0\n${passwdSum}\n`);

        const reads = [
          "passwd",
          "environ",
          "init-environ",
          "outside-file",
          "dangling",
          "climbing",
          "root/etc/passwd",
          "proc-root/etc/passwd",
          "proc-cwd/x",
          "outside-dir/secret.txt",
          "inner/via/secret.txt",
          "loop-a",
          "sneaky/etc/passwd",
          "home-parent/escaped.txt",
        ];
        const lists = [
          "outside-dir",
          "root",
          "root/etc",
          "proc-root",
          "inner/via",
          "sneaky",
          "home-parent",
          "loop-a",
        ];
        const writes = [
          "outside-file",
          "dangling",
          "outside-dir/new.txt",
          "inner/via/new.txt",
          "sneaky/escaped.txt",
          "home-parent/escaped.txt",
          "loop-a",
        ];
        const deletes = ["outside-dir/secret.txt", "inner/via/secret.txt", "outside-file/x"];
        const cwds = ["outside-dir", "root", "sneaky", "inner/via", "proc-root", "home-parent"];
        const at = (path: string) => `links/${path}`;
        await expectAllRefused(
          context,
          [
            ...reads.map((path): [string, () => Promise<unknown>] => [
              `readFile(${path})`,
              () => p.readFile(ref, at(path), { maxBytes: 1 << 20 }),
            ]),
            ...lists.map((path): [string, () => Promise<unknown>] => [
              `listFiles(${path})`,
              () => p.listFiles(ref, at(path)),
            ]),
            ...writes.map((path): [string, () => Promise<unknown>] => [
              `writeFile(${path})`,
              () => p.writeFile(ref, at(path), bytes("escaped")),
            ]),
            ...deletes.map((path): [string, () => Promise<unknown>] => [
              `deleteFile(${path})`,
              () => p.deleteFile(ref, at(path)),
            ]),
            ...cwds.map((path): [string, () => Promise<unknown>] => [
              `run cwd ${path}`,
              () => collectRun(p, ref, { command: "pwd", cwd: at(path), timeoutMs: 10_000 }),
            ]),
          ],
          "PATH_OUTSIDE_HOME",
          OUTSIDE,
        );

        // a listing shows each link as itself, never what it leads to
        const listed = await p.listFiles(ref, "links");
        expect(listed.filter((entry) => entry.type !== "symlink").map((entry) => entry.name)).toEqual([
          "inner",
        ]);
        // links that stay inside work like the file they name, and a write lands in that file
        counts.tried(3);
        expect(Buffer.from(await p.readFile(ref, at("inside-rel"), { maxBytes: 100 })).toString()).toBe(
          "inside target\n",
        );
        expect(Buffer.from(await p.readFile(ref, at("inside-abs"), { maxBytes: 100 })).toString()).toBe(
          "inside target\n",
        );
        await p.writeFile(ref, at("inside-rel"), bytes("written through\n"));
        expect(Buffer.from(await p.readFile(ref, "target.txt", { maxBytes: 100 })).toString()).toBe(
          "written through\n",
        );
        // deleting a link removes the link, never what it leads to
        counts.tried(2);
        await p.deleteFile(ref, at("outside-file"));
        await p.deleteFile(ref, at("outside-dir"));
        const remaining = (await p.listFiles(ref, "links")).map((entry) => entry.name);
        expect(remaining).not.toContain("outside-file");
        expect(remaining).not.toContain("outside-dir");

        const after = await outsideState();
        counts.lost(
          after === before
            ? []
            : [`outside the home: ${JSON.stringify(before)} became ${JSON.stringify(after)}`],
        );
        await shell(`rm -rf ${out}`);
        await p.deleteFile(ref, "links");
        await p.deleteFile(ref, "target.txt");
        counts.lost(await missingKeepers());
      },
      CASE_MS,
    );
  });

  unlessExcused("hard-link-outside-home", () => {
    it(
      "reads a hard link to a file outside the home as the home's own, and never writes or deletes through it",
      async (context) => {
        const p = provider();
        const counts = tally(context, FAMILY);
        // beside the home, so on its filesystem (a hard link cannot cross one)
        const made = await shell(`set -e
out=$(mktemp -d "$HOME/../cubicle-hard-XXXXXX")
printf 'outside original\\n' > "$out/original.txt"
ln "$out/original.txt" hard.txt
printf '%s\\n' "$out"`);
        expect(made.code, made.stderr).toBe(0);
        const out = made.stdout.trim();
        // the same bytes the shell could read itself: a hard link is the home's own file
        counts.tried(3);
        expect(Buffer.from(await p.readFile(ref, "hard.txt", { maxBytes: 100 })).toString()).toBe(
          "outside original\n",
        );
        await p.writeFile(ref, "hard.txt", bytes("replaced in the home\n"));
        expect(Buffer.from(await p.readFile(ref, "hard.txt", { maxBytes: 100 })).toString()).toBe(
          "replaced in the home\n",
        );
        await p.deleteFile(ref, "hard.txt");
        await expectProviderError(p.readFile(ref, "hard.txt", { maxBytes: 100 }), "FILE_NOT_FOUND");
        const outside = await shell(`cat ${shellQuote(`${out}/original.txt`)}`);
        counts.lost(outside.stdout === "outside original\n" ? [] : [`${out}/original.txt`]);
        await shell(`rm -rf ${shellQuote(out)}`);
        counts.lost(await missingKeepers());
      },
      CASE_MS,
    );
  });
});
