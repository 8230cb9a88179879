import { createHash, randomBytes } from "node:crypto";
import {
  holdVncConnection,
  vncAccepts,
  vncAnswers,
  vncMovePointer,
  watchVncClipboard,
} from "@cubicle/host/testing/vnc";
import { extract } from "tar-stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  BROWSER_SETTLE_MS,
  type DesktopAction,
  EGRESS_LEVELS,
  type EgressLevel,
  type EgressPolicy,
  EXIT_ABORTED,
  EXIT_TIMED_OUT,
  type HomeListing,
  type MachineRef,
  OUTPUT_TRUNCATED_MARKER,
  type SandboxProvider,
} from "../../src/contract/index.ts";
import { ScreenRelays, type VncTarget } from "../screen-relays.ts";
import {
  bytes,
  CASE_TIMEOUT_MS,
  collectRun,
  eventually,
  expectProviderError,
  Machines,
  type MakeProvider,
  type ProviderUnderTest,
  pngSize,
  readStream,
  type SnapshotEntry,
  sameBytes,
  sleep,
  snapshotHome,
  streamOf,
  testRef,
} from "./types.ts";

const OUTSIDE = "path is outside this computer's home";
const TRAVERSALS = ["../x", "/etc/passwd", "a/../../x", "a\\b", "a\0b"];

/**
 * Asserts the process a command printed the pid of is gone. `kill -0` also answers for a zombie:
 * a killed background child whose shell died before reaping it is orphaned to init, and some
 * inits (container and microVM ones) take a couple of seconds to reap; hence up to 3 s of retries.
 * The child is `sleep 30`, so it cannot end on its own inside that window.
 */
async function childGone(provider: SandboxProvider, ref: MachineRef, pid: string): Promise<boolean> {
  let last = "";
  const gone = await eventually(async () => {
    const probe = await collectRun(provider, ref, {
      command: `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`,
      timeoutMs: 5_000,
    });
    last = probe.stdout;
    return probe.stdout.trim() === "gone";
  }, 3_000);
  if (!gone) expect(last.trim(), `background child ${pid} after the command ended`).toBe("gone");
  return gone;
}

/** Asserts the server takes the password, where this machine can compute VNC's DES response. */
async function expectAccepts(target: VncTarget, password: string, expected: boolean): Promise<void> {
  const accepted = await vncAccepts(target.port, password);
  if (accepted !== null) expect(accepted, `the server takes ${password}`).toBe(expected);
}

/**
 * The backend's listHome for a running machine, which it must list; a backend without one is
 * excused from the cases that use it by name.
 */
function listingOf(p: SandboxProvider): (ref: MachineRef) => Promise<HomeListing> {
  const listHome = p.listHome?.bind(p);
  if (!listHome) throw new Error("no listHome: name the lists-the-home exception with its reason");
  return async (ref) => {
    const listing = await listHome(ref);
    if (!listing) throw new Error("a running machine was not listed");
    return listing;
  };
}

/** A tar's entries by name: type, mode, mtime, link target and a hash of the content. */
async function tarEntries(tar: ReadableStream<Uint8Array>): Promise<Map<string, string>> {
  const entries = new Map<string, string>();
  const parser = extract();
  const parsed = (async () => {
    for await (const entry of parser) {
      const hash = createHash("sha256");
      for await (const chunk of entry) hash.update(chunk as Buffer);
      const { type, mode, mtime, linkname } = entry.header;
      entries.set(
        entry.header.name,
        `${type} ${mode?.toString(8)} ${mtime?.getTime()} ${linkname ?? ""} ${hash.digest("hex")}`,
      );
    }
  })();
  parser.end(Buffer.from(await readStream(tar)));
  await parsed;
  return entries;
}

/** A pointer move sent through the view target is dropped; through the control target it lands. */
async function expectInputOnlyThroughControl(
  p: SandboxProvider,
  ref: MachineRef,
  view: VncTarget,
  control: VncTarget,
): Promise<void> {
  const spot = { x: 321, y: 123 };
  const viaView = await vncMovePointer(view.port, view.password, spot.x, spot.y, view.host);
  if (viaView === null) return; // no DES on this machine: cannot log in
  expect(viaView, "the view password is accepted").toBe(true);
  await sleep(300);
  expect((await p.observe(ref, 0)).cursor, "input through the view-only server").not.toEqual(spot);
  expect(await vncMovePointer(control.port, control.password, spot.x, spot.y, control.host)).toBe(true);
  let cursor = { x: -1, y: -1 };
  const moved = await eventually(
    async () => {
      cursor = (await p.observe(ref, 0)).cursor;
      return cursor.x === spot.x && cursor.y === spot.y;
    },
    3_000,
    150,
  );
  expect(moved ? spot : cursor, "input through the control server moves the pointer").toEqual(spot);
}

/**
 * Puts one line of text in PRIMARY and another in CLIPBOARD as a person would: each in its own
 * xterm, selected with a triple click (the second xterm's selection goes to CLIPBOARD, as a copy
 * does). Then it keeps the xterms, which own the selections, until it is aborted.
 */
function selectAndCopyScript(primary: string, clipboard: string): string {
  return `set -eu
show() {
  title=$1 text=$2
  shift 2
  xterm -T "$title" -geometry 40x4+0+0 "$@" -e sh -c "echo $text; exec sleep 300" &
  window=$(xdotool search --sync --onlyvisible --name "^$title$" | head -n 1)
  xdotool mousemove --window "$window" 12 8 click --repeat 3 --delay 100 1
}
show cubicle-primary ${primary}
show cubicle-clipboard ${clipboard} -xrm 'XTerm*selectToClipboard: true'
wait`;
}

function pidFrom(stdout: string): string {
  const pid = stdout.split("\n")[0]?.trim() ?? "";
  expect(pid, `the background pid printed first (stdout: ${JSON.stringify(stdout)})`).toMatch(/^\d+$/);
  return pid;
}

/**
 * A page that keeps its browser writing the profile for as long as it is open: IndexedDB
 * transactions and localStorage items (both kept under the profile's `Default/`), many a second.
 */
const BUSY_PAGE = `<!doctype html><title>busy</title><p>writing</p><script>
let n = 0;
const blob = "x".repeat(4096);
setInterval(() => {
  for (let i = 0; i < 16; i++) localStorage.setItem("k" + (n++ % 256), blob + n);
}, 20);
const opening = indexedDB.open("busy", 1);
opening.onupgradeneeded = () => opening.result.createObjectStore("s");
opening.onsuccess = () => {
  const db = opening.result;
  setInterval(() => {
    const tx = db.transaction("s", "readwrite");
    for (let i = 0; i < 16; i++) tx.objectStore("s").put(blob + n, n++ % 512);
  }, 20);
};
</script>
`;

/** The profile folder `/opt/cubicle/browser` (Docker) and the desktop's Chromium both use. */
const PROFILE = ".browser-profiles/chromium";

/** A snapshot with each file's bytes as a digest, so a mismatch lists paths rather than bytes. */
async function digestHome(p: SandboxProvider, ref: MachineRef, dir = ""): Promise<SnapshotDigest[]> {
  return (await snapshotHome(p, ref, dir)).map(({ content, ...entry }) =>
    content === undefined
      ? entry
      : { ...entry, sha256: createHash("sha256").update(content, "base64").digest("hex") },
  );
}

type SnapshotDigest = Omit<SnapshotEntry, "content"> & { sha256?: string };

/** The page's browser has started writing: its IndexedDB or localStorage is in the profile. */
async function writingProfile(p: SandboxProvider, ref: MachineRef): Promise<boolean> {
  try {
    const names = (await p.listFiles(ref, `${PROFILE}/Default`)).map((entry) => entry.name);
    return names.includes("IndexedDB") || names.includes("Local Storage");
  } catch {
    return false;
  }
}

/** Cases a backend may be excused from, each with the reason it cannot apply (see testing/backends/). */
export type ConformanceException =
  | "refuses-a-wrong-credential"
  | "import-while-a-browser-writes"
  | "launch-starts-programs"
  /** The backend has no listHome (optional): its homes are always exported whole, as checkpoints of it show. */
  | "lists-the-home"
  /** A connection its policy refused shows in its egress report (a backend enforcing `offline`). */
  | "egress-refusals-observed"
  /**
   * The vendor serves a screen from one server of its own, for view and control alike (Box): the
   * proxy lets input through only for control and withholds the clipboard from views, and there is
   * no control server to open, replace or close.
   */
  | "control-has-its-own-server";

/**
 * The behaviour every provider shares (providers/README.md), on one provider instance. A case
 * that stops its machine, replaces its home, or uses its screens or browsers provisions its own,
 * destroyed after it; the cases that only run commands and use files of their own names share
 * one machine for the suite (Machines.shared). A backend excused
 * from a case (a named exception, with its reason) does not register it.
 */
export function conformanceSuite(
  name: string,
  make: MakeProvider,
  exceptions: Partial<Record<ConformanceException, string>> = {},
): void {
  const unlessExcused = (exception: ConformanceException, register: () => void) => {
    if (exceptions[exception] === undefined) register();
  };
  describe(`${name} conformance`, () => {
    let put: ProviderUnderTest | undefined;
    const provider = (): SandboxProvider => {
      if (!put) throw new Error(`${name}: the provider was not made`);
      return put.provider;
    };
    const machines = new Machines(provider);
    // vendors' screens are WebSockets; the suite speaks RFB to them through a loopback relay
    const relays = new ScreenRelays();

    beforeAll(async () => {
      put = await make();
    });
    afterEach(async () => {
      await machines.destroyAll();
      await relays.closeAll();
    });
    afterAll(async () => {
      await machines.destroyAll({ shared: true });
      await put?.cleanup();
    });

    describe("access", () => {
      it("takes its own credential", async () => {
        await expect(provider().verifyAccess()).resolves.toBeUndefined();
      });

      unlessExcused("refuses-a-wrong-credential", () => {
        it("refuses a wrong credential as PROVIDER_AUTH_FAILED, naming what to fix", async () => {
          const wrong = put?.withWrongCredential?.();
          if (!wrong)
            throw new Error(`${name}: give withWrongCredential, or excuse the case with its reason`);
          const error = await expectProviderError(wrong.verifyAccess(), "PROVIDER_AUTH_FAILED");
          expect(error.message).toMatch(/_(API_KEY|TOKEN)\b/);
        });
      });
    });

    describe("files", () => {
      it(
        "writes, lists and reads back, including every byte value and the exec bit",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const all = new Uint8Array(256).map((_, i) => i);
          await p.writeFile(ref, "bytes.bin", all);
          expect(Buffer.from(await p.readFile(ref, "bytes.bin", { maxBytes: 1_000 }))).toEqual(
            Buffer.from(all),
          );

          await p.writeFile(ref, "run.sh", bytes("echo ran\n"), { executable: true });
          await p.writeFile(ref, "plain.txt", bytes("plain\n"));
          const top = await p.listFiles(ref, "");
          expect(top.find((e) => e.name === "run.sh")).toMatchObject({
            name: "run.sh",
            path: "run.sh",
            type: "file",
            size: 9,
            executable: true,
          });
          expect(top.find((e) => e.name === "plain.txt")).toMatchObject({
            path: "plain.txt",
            type: "file",
            size: 6,
            executable: false,
          });
          expect(top.find((e) => e.name === "bytes.bin")).toMatchObject({ type: "file", size: 256 });
          for (const entry of top) expect(Number.isNaN(Date.parse(entry.modifiedAt))).toBe(false);

          const ran = await collectRun(p, ref, { command: "./run.sh", timeoutMs: 5_000 });
          expect(ran.exit.code, `./run.sh stderr: ${ran.stderr}`).toBe(0);
          expect(ran.stdout).toBe("ran\n");
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "creates parent folders, lists entries sorted by name, and refuses to list a file",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          await p.writeFile(ref, "a/b/c.txt", bytes("nested\n"));
          expect(await p.listFiles(ref, "a")).toMatchObject([{ name: "b", path: "a/b", type: "directory" }]);
          expect(await p.listFiles(ref, "a/b")).toMatchObject([
            { name: "c.txt", path: "a/b/c.txt", type: "file", size: 7 },
          ]);
          expect(Buffer.from(await p.readFile(ref, "a/b/c.txt", { maxBytes: 100 })).toString()).toBe(
            "nested\n",
          );

          for (const file of ["sorted/zeta.txt", "sorted/alpha", "sorted/mid.txt", "sorted/beta/x"]) {
            await p.writeFile(ref, file, bytes(file));
          }
          const names = (await p.listFiles(ref, "sorted")).map((e) => e.name);
          expect(names).toEqual(["alpha", "beta", "mid.txt", "zeta.txt"]);

          await expectProviderError(p.listFiles(ref, "a/b/c.txt"), "NOT_A_DIRECTORY");
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "deletes a file and a folder recursively, and refuses to delete the home",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          await p.writeFile(ref, "gone.txt", bytes("x"));
          await p.writeFile(ref, "kept.txt", bytes("y"));
          await p.writeFile(ref, "folder/inner/deep.txt", bytes("z"));

          await p.deleteFile(ref, "gone.txt");
          await expectProviderError(p.readFile(ref, "gone.txt", { maxBytes: 10 }), "FILE_NOT_FOUND");
          await p.deleteFile(ref, "folder");
          await expectProviderError(p.listFiles(ref, "folder"), "FILE_NOT_FOUND");
          const names = (await p.listFiles(ref, "")).map((e) => e.name);
          expect(names).toContain("kept.txt");
          expect(names).not.toContain("gone.txt");
          expect(names).not.toContain("folder");

          await expectProviderError(p.deleteFile(ref, ""), "INVALID_PATH");
          expect(Buffer.from(await p.readFile(ref, "kept.txt", { maxBytes: 10 })).toString()).toBe("y");
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "reads files a command wrote, and runs commands in a given folder",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const made = await collectRun(p, ref, { command: "echo made > made.txt", timeoutMs: 5_000 });
          expect(made.exit.code, made.stderr).toBe(0);
          expect(Buffer.from(await p.readFile(ref, "made.txt", { maxBytes: 100 })).toString()).toBe("made\n");

          await p.writeFile(ref, "sub/dir/c.txt", bytes("inside\n"));
          const inside = await collectRun(p, ref, { command: "cat c.txt", cwd: "sub/dir", timeoutMs: 5_000 });
          expect(inside.exit.code, inside.stderr).toBe(0);
          expect(inside.stdout).toBe("inside\n");
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "refuses a missing file, and a file over maxBytes without returning any of it",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          await expectProviderError(p.readFile(ref, "nope.txt", { maxBytes: 1_000 }), "FILE_NOT_FOUND");
          await expectProviderError(
            p.readFile(ref, "no/such/dir.txt", { maxBytes: 1_000 }),
            "FILE_NOT_FOUND",
          );
          await expectProviderError(p.listFiles(ref, "nope"), "FILE_NOT_FOUND");

          await p.writeFile(ref, "big.bin", new Uint8Array(2_000).fill(7));
          let returned: Uint8Array | undefined;
          await expectProviderError(
            async () => {
              returned = await p.readFile(ref, "big.bin", { maxBytes: 1_000 });
            },
            "FILE_TOO_LARGE",
            "computer file exceeds 1000 bytes",
          );
          expect(returned).toBeUndefined();
          expect((await p.readFile(ref, "big.bin", { maxBytes: 2_000 })).length).toBe(2_000);
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "refuses paths outside the home through every entry point",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          await p.writeFile(ref, "inside/inside.txt", bytes("inside"));
          for (const path of TRAVERSALS) {
            const label = (entry: string) => `${entry}(${JSON.stringify(path)})`;
            await expectProviderError(
              p.listFiles(ref, path),
              "PATH_OUTSIDE_HOME",
              OUTSIDE,
              label("listFiles"),
            );
            await expectProviderError(
              p.readFile(ref, path, { maxBytes: 1_000 }),
              "PATH_OUTSIDE_HOME",
              OUTSIDE,
              label("readFile"),
            );
            await expectProviderError(
              p.writeFile(ref, path, bytes("escaped")),
              "PATH_OUTSIDE_HOME",
              OUTSIDE,
              label("writeFile"),
            );
            await expectProviderError(
              p.deleteFile(ref, path),
              "PATH_OUTSIDE_HOME",
              OUTSIDE,
              label("deleteFile"),
            );
            await expectProviderError(
              collectRun(p, ref, { command: "pwd", cwd: path, timeoutMs: 5_000 }),
              "PATH_OUTSIDE_HOME",
              OUTSIDE,
              label("run cwd"),
            );
          }
          expect(Buffer.from(await p.readFile(ref, "inside/inside.txt", { maxBytes: 100 })).toString()).toBe(
            "inside",
          );
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("workspace", () => {
      it(
        "exports a tar that imports byte-exact into a fresh machine, empty folders and exec bits included",
        async () => {
          const p = provider();
          const source = await machines.fresh();
          await p.writeFile(source, "bin/tool.sh", bytes("echo tool\n"), { executable: true });
          await p.writeFile(source, "notes/today.md", bytes("# today\n"));
          await p.writeFile(
            source,
            "data/all.bin",
            new Uint8Array(1_024).map((_, i) => (i * 7) % 256),
          );
          await p.writeFile(source, "empty/placeholder", bytes(""));
          await p.deleteFile(source, "empty/placeholder");
          await p.writeFile(source, "deep/er/still/file.txt", bytes("deep\n"));
          const before = await snapshotHome(p, source);
          expect(before).toContainEqual({
            path: "empty",
            type: "directory",
            executable: expect.any(Boolean),
          });

          // read a while after it was asked for, as a checkpoint store getting ready does
          const exported = await p.exportHome(source);
          await new Promise((resolve) => setTimeout(resolve, 500));
          const tar = await readStream(exported);
          expect(tar.length).toBeGreaterThan(0);

          const target = await machines.fresh("conf-target");
          expect(target.homeKey).not.toBe(source.homeKey);
          await p.importHome(target, streamOf(tar));
          expect(await snapshotHome(p, target)).toEqual(before);
          expect(await p.listFiles(target, "empty")).toEqual([]);

          const tool = await collectRun(p, target, { command: "./bin/tool.sh", timeoutMs: 5_000 });
          expect(tool.stdout, tool.stderr).toBe("tool\n");
        },
        CASE_TIMEOUT_MS,
      );

      unlessExcused("lists-the-home", () => {
        it(
          "lists the home with stamps a rewrite changes, and exports only the entries it is asked for",
          async () => {
            const p = provider();
            const listHome = listingOf(p);
            const ref = await machines.fresh();
            await p.writeFile(ref, "keep.txt", bytes("keep\n"));
            await p.writeFile(ref, "dir/change.txt", bytes("AAAA"));
            await p.writeFile(ref, "gone.txt", bytes("x"));
            const byPath = (listing: HomeListing) =>
              new Map(listing.entries.map((entry) => [entry.path, entry]));
            const first = byPath(await listHome(ref));
            expect([first.get(".")?.type, first.get("dir")?.type, first.get("keep.txt")?.type]).toEqual([
              "directory",
              "directory",
              "file",
            ]);

            await p.writeFile(ref, "dir/change.txt", bytes("BBBB"));
            await p.deleteFile(ref, "gone.txt");
            const second = byPath(await listHome(ref));
            expect(second.get("keep.txt")?.stamp).toBe(first.get("keep.txt")?.stamp);
            expect(second.get("dir/change.txt")?.stamp).not.toBe(first.get("dir/change.txt")?.stamp);
            expect(second.has("gone.txt")).toBe(false);

            // a folder alone, without its contents; a path gone meanwhile left out
            const named = await tarEntries(
              await p.exportHome(ref, { paths: ["dir", "keep.txt", "gone.txt"] }),
            );
            expect([...named.keys()]).toEqual(["./dir/", "./keep.txt"]);
          },
          CASE_TIMEOUT_MS,
        );

        // an incremental checkpoint takes the changed entries from this export and the others from
        // its parent, which a whole export made: the two must agree entry for entry
        it(
          "exports the listed entries by name exactly as the whole export has them",
          async () => {
            const p = provider();
            const listHome = listingOf(p);
            const ref = await machines.shared();
            const made = await collectRun(p, ref, {
              command: [
                "mkdir -p same/empty same/deep/er",
                "printf 'one\\n' > same/one.txt",
                "printf '#!/bin/sh\\n' > same/tool.sh && chmod 755 same/tool.sh",
                "printf x > 'same/deep/er/a name é.txt'",
                "ln -s one.txt same/link",
                "chmod 700 same/deep",
              ].join(" && "),
              timeoutMs: 10_000,
            });
            expect(made.exit.code, made.stderr).toBe(0);
            const paths = (await listHome(ref)).entries
              .map((entry) => entry.path)
              .filter((path) => path === "same" || path.startsWith("same/"));
            expect([...paths].sort()).toEqual([
              "same",
              "same/deep",
              "same/deep/er",
              "same/deep/er/a name é.txt",
              "same/empty",
              "same/link",
              "same/one.txt",
              "same/tool.sh",
            ]);
            const whole = await tarEntries(await p.exportHome(ref));
            const named = await tarEntries(await p.exportHome(ref, { paths }));
            expect(named).toEqual(new Map([...whole].filter(([name]) => name.startsWith("./same/"))));
          },
          CASE_TIMEOUT_MS,
        );
      });

      it(
        "import replaces the previous contents",
        async () => {
          const p = provider();
          const source = await machines.fresh();
          await p.writeFile(source, "shared.txt", bytes("from source\n"));
          await p.writeFile(source, "only-source.txt", bytes("source\n"));
          const expected = await snapshotHome(p, source);
          const tar = await readStream(await p.exportHome(source));

          const target = await machines.fresh("conf-target");
          await p.writeFile(target, "only-target.txt", bytes("target\n"));
          await p.writeFile(target, "shared.txt", bytes("from target, longer\n"));
          await p.writeFile(target, "target-dir/x.txt", bytes("x"));
          await p.importHome(target, streamOf(tar));

          const names = (await p.listFiles(target, "")).map((e) => e.name);
          expect(names).not.toContain("only-target.txt");
          expect(names).not.toContain("target-dir");
          await expectProviderError(
            p.readFile(target, "only-target.txt", { maxBytes: 100 }),
            "FILE_NOT_FOUND",
          );
          expect(await snapshotHome(p, target)).toEqual(expected);
        },
        CASE_TIMEOUT_MS,
      );

      unlessExcused("import-while-a-browser-writes", () =>
        it(
          "an import while a browser writes its profile succeeds each time and leaves exactly the archive's home, the browser closed",
          async () => {
            const p = provider();
            const source = await machines.fresh();
            // the archive's own profile, so a browser writing after the swap would show as a mix
            await p.closeBrowsers(source);
            await p.deleteFile(source, ".browser-profiles").catch(() => undefined);
            await p.writeFile(source, `${PROFILE}/Default/Preferences`, bytes('{"from":"the archive"}'));
            await p.writeFile(source, `${PROFILE}/Default/archive-marker.txt`, bytes("archived\n"));
            await p.writeFile(source, "busy.html", bytes(BUSY_PAGE));
            await p.writeFile(source, "notes/kept.md", bytes("# kept\n"));
            await p.writeFile(source, "bin/tool.sh", bytes("echo tool\n"), { executable: true });
            const files = await digestHome(p, source);
            const profile = await digestHome(p, source, ".browser-profiles");
            const tar = await readStream(await p.exportHome(source));

            const target = await machines.fresh("conf-target");
            await p.writeFile(target, "previous.txt", bytes("the target's own\n"));
            await p.writeFile(target, "busy.html", bytes(BUSY_PAGE));
            // twice: the second round shows the first import left a computer that runs a browser and imports again
            for (let round = 1; round <= 2; round++) {
              const label = `import ${round}`;
              // Docker: opens in the browser the computer started at boot, if it still runs
              await p.launch(target, 0, { kind: "path", path: "busy.html" }, { cwd: "" });
              expect(
                await eventually(() => writingProfile(p, target), 30_000, 250),
                `${label}: the browser writes its profile`,
              ).toBe(true);

              await p.importHome(target, streamOf(tar));
              expect(await digestHome(p, target), `${label}: the archive's files`).toEqual(files);
              expect(
                await digestHome(p, target, ".browser-profiles"),
                `${label}: the archive's browser profile, nothing of the running browser's`,
              ).toEqual(profile);
              const staging = (await p.listFiles(target, ""))
                .map((entry) => entry.name)
                .filter((name) => name.startsWith(".cubicle-"));
              expect(staging, `${label}: nothing of the swap is left in the home`).toEqual([]);
              // the import closed the browser (settling returns at once when none runs) ...
              const settling = Date.now();
              await p.settleBrowsers(target);
              expect(Date.now() - settling, `${label}: no browser runs after the import`).toBeLessThan(
                BROWSER_SETTLE_MS / 2,
              );
              // ... and nothing wrote into the home afterwards
              await sleep(1_000);
              expect(
                await digestHome(p, target, ".browser-profiles"),
                `${label}: the profile a moment later`,
              ).toEqual(profile);
            }
          },
          // desktop: each import first settles the running Chromium (BROWSER_SETTLE_MS)
          2 * (BROWSER_SETTLE_MS + CASE_TIMEOUT_MS),
        ),
      );
    });

    describe("apps", () => {
      unlessExcused("launch-starts-programs", () =>
        it(
          "launch opens a folder in a terminal started there, on a display its commands see",
          async () => {
            const p = provider();
            const ref = await machines.fresh();
            const env = p.screenEnv(0);
            expect(env, "commands can target screen 0").not.toBeNull();
            await p.writeFile(ref, "work/today/notes.md", bytes("# today\n"));
            const launched = await p.launch(ref, 0, { kind: "path", path: "work/today" }, { cwd: "" });
            expect(launched.app).toBe("terminal");
            expect(launched.display).toBe(env?.DISPLAY ?? null);
            // the terminal outlives the launch, started in the folder: find it (or the shell it
            // runs) by its working directory; which terminal program it is depends on the machine
            const inFolder = async () => {
              const found = await collectRun(p, ref, {
                command:
                  'for p in /proc/[0-9]*; do [ "$(readlink "$p/cwd" 2>/dev/null)" = "$PWD/work/today" ] && cat "$p/comm"; done; true',
                timeoutMs: 10_000,
              });
              return found.stdout.split("\n").some((name) => /term|sh$/.test(name));
            };
            expect(await eventually(inFolder, 10_000, 250), "a terminal runs in work/today").toBe(true);
          },
          CASE_TIMEOUT_MS,
        ),
      );

      it(
        "launch refuses paths outside the home or missing, and screens its commands cannot target",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          const at = (path: string) => p.launch(ref, 0, { kind: "path", path }, { cwd: "" });
          await expectProviderError(at("../outside"), "PATH_OUTSIDE_HOME");
          await expectProviderError(at("/etc"), "PATH_OUTSIDE_HOME");
          await expectProviderError(at("not/there.txt"), "FILE_NOT_FOUND");
          const last = p.capabilities.maxScreens - 1;
          if (p.screenEnv(last) === null) {
            await expectProviderError(
              p.launch(ref, last, { kind: "app", app: "terminal" }, { cwd: "" }),
              "MULTI_SCREEN_UNAVAILABLE",
            );
          } else {
            expect(p.screenEnv(last)).toEqual({ DISPLAY: expect.stringMatching(/^:\d+$/) });
          }
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("desktop", () => {
      it(
        "observes a PNG screen, and acting on it changes it",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          if (!p.capabilities.graphical) {
            await expectProviderError(p.observe(ref, 0), "GRAPHICAL_UNAVAILABLE");
            return;
          }
          const first = await p.observe(ref, 0);
          expect(pngSize(first.png)).toEqual({ width: first.width, height: first.height });
          expect(first.width).toBeGreaterThan(0);
          expect(first.height).toBeGreaterThan(0);

          const actions: DesktopAction[] = [
            { type: "click", x: 200, y: 150 },
            { type: "type", text: "cubicle" },
          ];
          const result = await p.act(ref, 0, actions);
          expect(result).toMatchObject({ completed: 2, total: 2 });
          expect(result.error).toBeUndefined();

          let latest = first;
          const changed = await eventually(
            async () => {
              latest = await p.observe(ref, 0);
              return !sameBytes(latest.png, first.png);
            },
            3_000,
            150,
          );
          expect(changed, "the screen PNG changed after clicking and typing").toBe(true);
          expect(pngSize(latest.png)).toEqual({ width: latest.width, height: latest.height });

          await expectProviderError(p.observe(ref, p.capabilities.maxScreens), "INVALID_SCREEN");
          await expectProviderError(p.observe(ref, -1), "INVALID_SCREEN");
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "rejects a batch over the limit, or with any invalid action, before running any of it",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          if (!p.capabilities.graphical) return;
          const park = await p.act(ref, 0, [{ type: "move", x: 600, y: 400 }]);
          expect(park).toMatchObject({ completed: 1, total: 1 });
          expect((await p.observe(ref, 0)).cursor).toEqual({ x: 600, y: 400 });

          const tooMany: DesktopAction[] = [
            { type: "move", x: 5, y: 5 },
            ...Array.from({ length: 24 }, (): DesktopAction => ({ type: "wait", ms: 0 })),
          ];
          expect(tooMany).toHaveLength(25);
          await expectProviderError(p.act(ref, 0, tooMany), "INVALID_ACTIONS", undefined, "25 actions");

          const badLast: DesktopAction[] = [
            { type: "move", x: 5, y: 5 },
            { type: "wait", ms: 0 },
            { type: "click", x: -1, y: 10 },
          ];
          await expectProviderError(p.act(ref, 0, badLast), "INVALID_ACTIONS", undefined, "bad last");
          const badMiddle: DesktopAction[] = [
            { type: "move", x: 5, y: 5 },
            { type: "key", key: "not a keysym!" },
            { type: "move", x: 6, y: 6 },
          ];
          await expectProviderError(p.act(ref, 0, badMiddle), "INVALID_ACTIONS", undefined, "bad middle");
          const unknownType = [
            { type: "move", x: 5, y: 5 },
            { type: "teleport" },
          ] as unknown as DesktopAction[];
          await expectProviderError(p.act(ref, 0, unknownType), "INVALID_ACTIONS", undefined, "unknown type");
          await expectProviderError(p.act(ref, 0, []), "INVALID_ACTIONS", undefined, "empty batch");

          await sleep(300);
          const after = await p.observe(ref, 0);
          expect(after.cursor, "no action of a rejected batch ran").not.toEqual({ x: 5, y: 5 });
          expect(after.cursor).toEqual({ x: 600, y: 400 });
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("screen control", () => {
      unlessExcused("control-has-its-own-server", () => {
        it(
          "opens a control target idempotently, replaces it for another password, and closes it",
          async () => {
            const p = provider();
            const live = put?.liveScreens === true;
            const ref = await machines.fresh();
            if (!p.capabilities.graphical) {
              await expectProviderError(p.openControl(ref, 0, "ctl12345"), "GRAPHICAL_UNAVAILABLE");
              return;
            }
            const viewTarget = await p.openScreen(ref, 0);
            const controlTarget = await p.openControl(ref, 0, "ctl12345");
            expect(controlTarget).toMatchObject({ password: "ctl12345" });
            expect(controlTarget, "control has its own server").not.toEqual(viewTarget);
            const view = await relays.reach(viewTarget);
            const control = await relays.reach(controlTarget);
            if (live) await expectInputOnlyThroughControl(p, ref, view, control);

            const held = live ? await holdVncConnection(control.port, control.host) : undefined;
            if (held) expect(held.banner).toBe("RFB 003.008\n");
            expect(await p.openControl(ref, 0, "ctl12345"), "the same password: the same target").toEqual(
              controlTarget,
            );
            if (held) {
              expect(held.isClosed(), "a live control connection survives opening again").toBe(false);
              expect(await held.securityTypes(), "VNC authentication offered").toContain(2);
              await expectAccepts(control, "ctl12345", true);
            }

            const replacedTarget = await p.openControl(ref, 0, "other678");
            expect(replacedTarget).toMatchObject({ password: "other678" });
            const replaced = await relays.reach(replacedTarget);
            if (held) {
              expect(await held.closesWithin(10_000), "another password drops the connections").toBe(true);
              await expectAccepts(replaced, "other678", true);
              await expectAccepts(replaced, "ctl12345", false);
            }

            await p.closeControl(ref, 0);
            await p.closeControl(ref, 0);
            if (live) {
              expect(await vncAnswers(replaced.port, replaced.host), "control after closeControl").toBe(
                false,
              );
              expect(await vncAnswers(view.port, view.host), "the view after closeControl").toBe(true);
            }
            const reopened = await relays.reach(await p.openControl(ref, 0, "ctl12345"));
            expect(reopened.password).toBe("ctl12345");
            if (live) expect(await vncAnswers(reopened.port, reopened.host), "reopened control").toBe(true);
          },
          // many round trips into a real computer, a few screenshots among them
          2 * CASE_TIMEOUT_MS,
        );

        it(
          "a view server never sends the clipboard; a control server does",
          async () => {
            const p = provider();
            const ref = await machines.fresh();
            if (!p.capabilities.graphical || !put?.liveScreens) return;
            const view = await relays.reach(await p.openScreen(ref, 0));
            const control = await relays.reach(await p.openControl(ref, 0, "clip1234"));
            const viewer = await watchVncClipboard(view.port, view.password, view.host);
            const controller = await watchVncClipboard(control.port, control.password, control.host);
            if (!viewer || !controller) return; // no DES on this machine: cannot log in
            const nonce = randomBytes(4).toString("hex");
            const primary = `primary-${nonce}`;
            const clipboard = `clipboard-${nonce}`;
            const selecting = new AbortController();
            const selected = collectRun(p, ref, {
              command: selectAndCopyScript(primary, clipboard),
              env: p.screenEnv(0) ?? {},
              timeoutMs: CASE_TIMEOUT_MS,
              signal: selecting.signal,
            });
            try {
              const copied = () =>
                [primary, clipboard].every((text) => controller.texts.some((got) => got.includes(text)));
              expect(
                // on a loaded machine x11vnc may take a while to notice a new selection owner
                await eventually(async () => copied(), CASE_TIMEOUT_MS, 200),
                `the control server sends both selections (it sent ${JSON.stringify(controller.texts)})`,
              ).toBe(true);
              // both servers watch the same display; give the view server as long again to (not) send
              await sleep(3_000);
              expect(viewer.texts, "ServerCutText from the view server").toEqual([]);
            } finally {
              selecting.abort();
              viewer.close();
              controller.close();
              await selected.catch(() => undefined);
            }
          },
          2 * CASE_TIMEOUT_MS,
        );
      });

      it(
        "refuses bad screens and passwords, refuses a stopped machine, and closes with it",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          if (!p.capabilities.graphical) return;
          await expectProviderError(
            p.openControl(ref, p.capabilities.maxScreens, "ctl12345"),
            "INVALID_SCREEN",
            undefined,
            "screen maxScreens",
          );
          await expectProviderError(
            p.openControl(ref, -1, "ctl12345"),
            "INVALID_SCREEN",
            undefined,
            "screen -1",
          );
          await expectProviderError(p.closeControl(ref, -1), "INVALID_SCREEN", undefined, "close screen -1");
          for (const password of ["", "ninechars", "sp ace", "tab\tx", "é"]) {
            await expectProviderError(
              p.openControl(ref, 0, password),
              "INVALID_PASSWORD",
              undefined,
              `password ${JSON.stringify(password)}`,
            );
          }

          const control = await relays.reach(await p.openControl(ref, 0, "~!@#$%^&"));
          if (exceptions["control-has-its-own-server"] === undefined)
            expect(control.password).toBe("~!@#$%^&");
          await p.stop(ref);
          if (put?.liveScreens) {
            expect(await vncAnswers(control.port, control.host), "control after stop").toBe(false);
          }
          await expectProviderError(p.openControl(ref, 0, "ctl12345"), "MACHINE_STOPPED", undefined, "open");
          await expectProviderError(p.openScreen(ref, 0), "MACHINE_STOPPED", undefined, "openScreen");
          // a stopped machine runs no servers: closing is a no-op, as a lease release expects
          await p.closeControl(ref, 0);
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("lifecycle", () => {
      it(
        "stops idempotently and resumes the same machine with its files",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          expect(await p.status(ref)).toBe("running");
          await p.writeFile(ref, "keep.txt", bytes("still here\n"));

          await p.stop(ref);
          await p.stop(ref);
          expect(await p.status(ref)).toBe("stopped");

          const resumed = await p.provision(ref);
          expect(resumed).toEqual({ providerRef: ref.providerRef, fresh: false });
          expect(await p.status(ref)).toBe("running");
          expect(Buffer.from(await p.readFile(ref, "keep.txt", { maxBytes: 100 })).toString()).toBe(
            "still here\n",
          );
          const ran = await collectRun(p, ref, { command: "cat keep.txt", timeoutMs: 5_000 });
          expect(ran.stdout).toBe("still here\n");

          const again = await p.provision(ref);
          expect(again).toEqual({ providerRef: ref.providerRef, fresh: false });
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "provisions a fresh machine after destroy, and reports unknown refs as missing",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          await p.destroy(ref);
          expect(await p.status(ref)).toBe("missing");

          const next = await p.provision(ref);
          machines.track(testRef(ref.homeKey, next.providerRef));
          expect(next.fresh).toBe(true);
          expect(next.providerRef).not.toBe(ref.providerRef);

          expect(await p.status(testRef(ref.homeKey, "no-such-machine-0000"))).toBe("missing");
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("egress", () => {
      const policyOf = (level: EgressLevel): EgressPolicy => ({
        level,
        // a documentation address (RFC 5737): never a real destination; narrowed to a port where
        // the backend's allowlists can say ports
        allow:
          level === "allowlist"
            ? [
                {
                  host: "192.0.2.10",
                  ports: provider().capabilities.egressAllowlist?.ports === false ? [] : [443],
                },
              ]
            : [],
      });
      /** The strictest level the backend enforces. */
      const strictest = (p: SandboxProvider): EgressLevel => {
        const level = EGRESS_LEVELS.findLast((l) => p.capabilities.egress.includes(l));
        if (!level) throw new Error(`${name} enforces no egress level`);
        return level;
      };

      it(
        "applies each level it enforces and refuses the others with EGRESS_UNSUPPORTED",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          for (const level of EGRESS_LEVELS) {
            if (p.capabilities.egress.includes(level)) await p.setEgress(ref, policyOf(level));
            else {
              const error = await expectProviderError(
                p.setEgress(ref, policyOf(level)),
                "EGRESS_UNSUPPORTED",
              );
              for (const can of p.capabilities.egress) expect(error.message).toContain(can);
            }
          }
          await expectProviderError(
            p.setEgress(testRef(ref.homeKey, "no-such-machine-0000"), policyOf("open")),
            "MACHINE_MISSING",
          );
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "keeps the policy across a stop and a resume, and takes one while stopped",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          const strict = policyOf(strictest(p));
          await p.setEgress(ref, strict);
          await p.stop(ref);
          if (put?.appliedEgress) expect(await put.appliedEgress(ref)).toEqual(strict);
          const next = policyOf(p.capabilities.egress[0] ?? "open");
          await p.setEgress(ref, next);
          await p.provision(ref);
          if (put?.appliedEgress) expect(await put.appliedEgress(ref)).toEqual(next);
          await p.setEgress(ref, strict);
          if (put?.appliedEgress) expect(await put.appliedEgress(ref)).toEqual(strict);
        },
        CASE_TIMEOUT_MS,
      );

      unlessExcused("egress-refusals-observed", () => {
        it(
          "refuses a connection offline and reports it with its destination",
          async () => {
            const p = provider();
            if (!p.egressReport) throw new Error(`${name} observes refusals but has no egressReport`);
            const ref = await machines.fresh();
            await p.setEgress(ref, policyOf("offline"));
            const before = await p.egressReport(ref, null);
            const tried = await collectRun(p, ref, {
              command:
                "timeout 5 bash -c 'exec 3<>/dev/tcp/192.0.2.1/9' 2>/dev/null && echo connected || echo refused",
              timeoutMs: 15_000,
            });
            expect(tried.stdout.trim()).toBe("refused");
            let refusals = before.refusals;
            const seen = await eventually(async () => {
              const report = await p.egressReport?.(ref, before.cursor);
              refusals = report?.refusals ?? [];
              return refusals.some((r) => r.address === "192.0.2.1");
            }, 10_000);
            expect(seen ? refusals.find((r) => r.address === "192.0.2.1") : refusals).toMatchObject({
              address: "192.0.2.1",
              port: 9,
              protocol: "tcp",
            });
            expect((await p.egressReport(ref, null)).refusedTotal).toBeGreaterThan(before.refusedTotal);
          },
          CASE_TIMEOUT_MS,
        );
      });
    });

    describe("browsers", () => {
      it(
        "closes and settles at once when no browser runs, idempotently, running or stopped",
        async () => {
          const p = provider();
          const ref = await machines.fresh();
          // a graphical computer may start a browser by itself (Docker: screen 0's, at boot)
          await p.closeBrowsers(ref);
          const started = Date.now();
          await p.closeBrowsers(ref);
          await p.settleBrowsers(ref);
          // no browser runs, so there is nothing to wait for; with one, settling takes 31 s
          expect(Date.now() - started, "settling with no browser running").toBeLessThan(
            BROWSER_SETTLE_MS / 2,
          );
          const ran = await collectRun(p, ref, { command: "echo still here", timeoutMs: 5_000 });
          expect(ran.stdout, "the machine keeps running").toBe("still here\n");

          await p.stop(ref);
          await p.settleBrowsers(ref);
          await p.closeBrowsers(ref);
          expect(await p.status(ref)).toBe("stopped");
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "refuses an unknown machine with MACHINE_MISSING",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const unknown = testRef(ref.homeKey, "no-such-machine-0000");
          await expectProviderError(p.settleBrowsers(unknown), "MACHINE_MISSING");
          await expectProviderError(p.closeBrowsers(unknown), "MACHINE_MISSING");
        },
        CASE_TIMEOUT_MS,
      );
    });

    describe("commands", () => {
      it(
        "keeps stdout and stderr apart and returns non-zero exits",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const both = await collectRun(p, ref, { command: "echo out; echo err >&2", timeoutMs: 5_000 });
          expect(both.stdout).toBe("out\n");
          expect(both.stderr).toBe("err\n");
          expect(both.exit).toMatchObject({ type: "exit", code: 0, truncated: false });

          const three = await collectRun(p, ref, { command: "exit 3", timeoutMs: 5_000 });
          expect(three.exit).toMatchObject({ code: 3, truncated: false });
          const no = await collectRun(p, ref, { command: "false || exit 5", timeoutMs: 5_000 });
          expect(no.exit.code).toBe(5);
          const chained = await collectRun(p, ref, {
            command: "true && echo 'a b'; false && echo never; echo \"c  d\"",
            timeoutMs: 5_000,
          });
          expect(chained.stdout).toBe("a b\nc  d\n");
          expect(chained.exit.code).toBe(0);
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "runs in the home with HOME set, the request's env, and none of the server's",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const secret = "CUBICLE_CONFORMANCE_SERVER_ONLY";
          process.env[secret] = "leaked";
          try {
            const where = await collectRun(p, ref, {
              command: `pwd; echo $HOME; echo "[$${secret}]"; echo $GREETING`,
              env: { GREETING: "hello" },
              timeoutMs: 5_000,
            });
            expect(where.exit.code, where.stderr).toBe(0);
            const [pwd, home, leak, greeting] = where.stdout.split("\n");
            expect(home, "$HOME is set").toBeTruthy();
            expect(pwd, "the working directory is the home").toBe(home);
            expect(leak, "the server's environment is not visible").toBe("[]");
            expect(greeting).toBe("hello");
          } finally {
            delete process.env[secret];
          }
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "times out with 124 and kills the whole process tree",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const started = Date.now();
          const run = await collectRun(p, ref, { command: "sleep 30 & echo $!; sleep 30", timeoutMs: 500 });
          expect(Date.now() - started, "the timeout ended the command promptly").toBeLessThan(10_000);
          expect(run.exit).toMatchObject({
            code: EXIT_TIMED_OUT,
            message: "command timed out after 500 ms",
          });
          await childGone(p, ref, pidFrom(run.stdout));
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "aborts with 130 and kills the whole process tree",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const controller = new AbortController();
          const started = Date.now();
          const run = await collectRun(
            p,
            ref,
            { command: "sleep 30 & echo $!; sleep 30", timeoutMs: 15_000, signal: controller.signal },
            (event, soFar) => {
              if (event.type === "stdout" && soFar.stdout.includes("\n")) controller.abort();
            },
          );
          expect(controller.signal.aborted, "a stdout event arrived before the end").toBe(true);
          expect(Date.now() - started, "the abort ended the command promptly").toBeLessThan(10_000);
          expect(run.exit).toMatchObject({ code: EXIT_ABORTED, message: "command aborted" });
          await childGone(p, ref, pidFrom(run.stdout));
        },
        CASE_TIMEOUT_MS,
      );

      it(
        "caps stdout and stderr together and marks the cut once",
        async () => {
          const p = provider();
          const ref = await machines.shared();
          const run = await collectRun(p, ref, {
            command: "seq 1 300000",
            timeoutMs: 15_000,
            maxOutputBytes: 10_000,
          });
          expect(run.exit).toMatchObject({ code: 0, truncated: true });
          const total = Buffer.byteLength(run.stdout) + Buffer.byteLength(run.stderr);
          expect(total).toBeLessThanOrEqual(10_000 + Buffer.byteLength(OUTPUT_TRUNCATED_MARKER));
          expect(run.stdout.split(OUTPUT_TRUNCATED_MARKER)).toHaveLength(2);
          expect(run.stdout.endsWith(OUTPUT_TRUNCATED_MARKER), "nothing after the marker").toBe(true);
          const kept = run.stdout.slice(0, -OUTPUT_TRUNCATED_MARKER.length);
          const expected = Array.from({ length: 3_000 }, (_, i) => `${i + 1}\n`).join("");
          expect(expected.startsWith(kept), "the kept output is the start of the real output").toBe(true);
          expect(kept.length).toBeGreaterThan(0);

          const small = await collectRun(p, ref, {
            command: "seq 1 3",
            timeoutMs: 5_000,
            maxOutputBytes: 10_000,
          });
          expect(small.stdout).toBe("1\n2\n3\n");
          expect(small.exit.truncated).toBe(false);
        },
        CASE_TIMEOUT_MS,
      );
    });
  });
}
