/**
 * The file tools against a computer that fights back: a process in a real Docker computer swaps a
 * folder of its home for symlinks (to a root-owned folder, to a folder of its own outside the home,
 * to /etc and to /) in a tight loop, and swaps the home import's staging folder for a symlink as
 * soon as it appears, while thousands of reads, writes, listings, deletes, downloads and archive
 * uploads go through the supervisor's real API. No byte from outside the home may come back and
 * nothing outside it may be written.
 */
import { randomBytes } from "node:crypto";
import { FrameDemuxer } from "@cubicle/host/docker-frames";
import {
  type ComputerRef,
  createSupervisorClient,
  type SupervisorClient,
  SupervisorError,
} from "@cubicle/providers/supervisor-wire";
import Docker from "dockerode";
import { pack } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectExec, exitCodeOf } from "../../src/containers/docker/exec.ts";
import { startTestSupervisor, type TestSupervisor } from "../../src/testing/supervisor.ts";

/**
 * Operations of each small kind (read, write, listing, delete), and of the costly ones. Each op is
 * a docker exec, so thousands per kind would cost most of the test command's budget; what must be
 * large is the number of swaps each kind of operation races against, counted by the attacker
 * (SWAPS_PER_KIND at least), and on the code before resolve-and-open was one step these counts
 * leaked on every run (a quarter of the writes went outside the home).
 */
const SMALL_OPS = 300;
const ARCHIVE_OPS = 20;
const SWAPS_PER_KIND = 2_000;
const CONCURRENCY = 8;
/** The race gives up after this long per kind, and then fails on the count. */
const KIND_DEADLINE_MS = 600_000;

const TAG = randomBytes(6).toString("hex");
const ROOT_MARKER = `ROOT-ONLY-${TAG}`;
const WORLD_MARKER = `WORLD-READABLE-${TAG}`;
const OWN_MARKER = `OUTSIDE-HOME-${TAG}`;
const INSIDE = (name: string) => `inside ${name}\n`;
/** Names the folder holds inside the home; the same names exist outside it. */
const NAMES = ["f", "secret", "passwd", "shadow", "victim"];

/**
 * As root: a root-owned folder with a world-readable and a root-only marker. As the computer's
 * user: a folder of its own outside the home (which it may write), and the race folder.
 */
const ROOT_SETUP = `set -e
mkdir -p /cubicle-race
printf '%s\\n' '${WORLD_MARKER}' > /cubicle-race/f
printf '%s\\n' '${ROOT_MARKER}' > /cubicle-race/secret
chmod 644 /cubicle-race/f; chmod 600 /cubicle-race/secret
touch /cubicle-race/victim /cubicle-race/outside-only
printf '%s\\n' '${ROOT_MARKER}' >> /etc/shadow`;

const USER_SETUP = `set -e
mkdir -p /tmp/race-open /home/cubicle/race/d
for n in ${NAMES.join(" ")} outside-only; do printf '%s\\n' '${OWN_MARKER}' > /tmp/race-open/$n; done
for n in ${NAMES.join(" ")}; do printf 'inside %s\\n' $n > /home/cubicle/race/d/$n; done`;

/**
 * The attacker, as the computer's user: race/d and race/link are exchanged atomically
 * (renameat2 RENAME_EXCHANGE), so race/d is by turns the real folder and a symlink out of the home
 * with no moment in between; the symlink's target rotates. Any staging folder of an import is
 * moved aside and replaced by a symlink to the attacker's own folder outside the home.
 */
const ATTACKER = `
my ($sys) = @ARGV;
my @targets = ("/cubicle-race", "/tmp/race-open", "/etc", "/");
my $race = "/home/cubicle/race";
my $i = 0;
my $swaps = 0;
until (-e "/tmp/race-stop") {
  $i++;
  if ($i % 64 == 0 && opendir(my $home, "/home/cubicle")) {
    for my $name (readdir $home) {
      next unless $name =~ /^\\.cubicle-import-/ && !-l "/home/cubicle/$name";
      rename "/home/cubicle/$name", "/home/cubicle/race-moved-$i" and symlink "/tmp/race-open", "/home/cubicle/$name";
    }
  }
  if (!-d "$race/d" && !-d "$race/link") {
    mkdir $race; mkdir "$race/d";
    for my $n (qw(${NAMES.join(" ")})) { open my $f, ">", "$race/d/$n"; print $f "inside $n\\n"; close $f }
  }
  if (-l "$race/link" || !-e "$race/link") {
    symlink $targets[$i % @targets], "$race/tmp-link"; rename "$race/tmp-link", "$race/link";
  }
  $swaps++ for grep { syscall($sys, -100, "$race/d", -100, "$race/link", 2) == 0 } 1 .. 16;
  if ($i % 256 == 0 && open(my $count, ">", "/tmp/race-swaps.next")) {
    print $count $swaps; close $count; rename "/tmp/race-swaps.next", "/tmp/race-swaps";
  }
}`;

/** renameat2's number on the engine's architecture. */
const RENAMEAT2 = process.arch === "arm64" ? "276" : "316";

/** Runs `jobs` `count` times, `CONCURRENCY` at once, until done or the deadline; how many ran. */
async function race(count: number, job: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const deadline = Date.now() + KIND_DEADLINE_MS;
  const worker = async () => {
    while (next < count && Date.now() < deadline) await job(next++);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return next;
}

/**
 * The call's result, or null when the supervisor refused it: under the race a path is now inside,
 * now outside, now missing, and an operation whose ground moved may fail. What must never happen is
 * a leak; a run where nearly everything failed proves nothing, so successes are counted.
 */
const succeeded = new Map<string, number>();
async function refusedOrDone<T>(kind: string, call: Promise<T>): Promise<T | null> {
  try {
    const result = await call;
    succeeded.set(kind, (succeeded.get(kind) ?? 0) + 1);
    return result;
  } catch (error) {
    if (error instanceof SupervisorError) return null;
    throw error;
  }
}

/** At least a tenth of the operations of `kind` succeeded (the race did not just break them). */
const someSucceeded = (kind: string, count: number) =>
  expect(succeeded.get(kind) ?? 0, `${kind}s that succeeded`).toBeGreaterThan(count / 10);

const leaks = (text: string) =>
  [ROOT_MARKER, WORLD_MARKER, OWN_MARKER, "root:x:0:0", "outside-only"].filter((marker) =>
    text.includes(marker),
  );

async function homeTar(round: number): Promise<Buffer<ArrayBuffer>> {
  const tar = pack();
  tar.entry({ name: "race/", type: "directory", mode: 0o755 });
  tar.entry({ name: "race/d/", type: "directory", mode: 0o755 });
  for (const name of NAMES) tar.entry({ name: `race/d/${name}`, mode: 0o644 }, INSIDE(name));
  tar.entry({ name: `race/d/imported-${round}`, mode: 0o644 }, "imported\n");
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("the file tools while the computer swaps folders for symlinks", () => {
  const docker = new Docker();
  const suffix = randomBytes(4).toString("hex");
  const ref: ComputerRef = {
    homeKey: `race-${suffix}`,
    computerId: `race-${suffix}`,
    workspaceId: "ws-race",
  };
  let supervisor: TestSupervisor;
  let client: SupervisorClient;
  let container: Docker.Container;

  const asRoot = async (script: string) => {
    const exec = await container.exec({
      Cmd: ["sh", "-c", script],
      User: "0",
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    const demux = new FrameDemuxer();
    let output = "";
    stream.on("data", (chunk: Buffer) => {
      for (const piece of demux.push(chunk)) output += piece.data.toString("utf8");
    });
    await new Promise((resolve) => stream.once("end", resolve));
    return { code: await exitCodeOf(exec), output };
  };

  beforeAll(async () => {
    supervisor = await startTestSupervisor();
    client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
    await client.create(ref);
    container = docker.getContainer(`cubicle-${ref.homeKey}`);
    expect((await asRoot(ROOT_SETUP)).code).toBe(0);
    expect((await collectExec(container, ["sh", "-c", USER_SETUP])).code).toBe(0);
    const attacker = await container.exec({ Cmd: ["perl", "-e", ATTACKER, RENAMEAT2], User: "1000:1000" });
    await attacker.start({ Detach: true });
  }, 240_000);

  afterAll(async () => {
    await container?.remove({ force: true }).catch(() => undefined);
    await supervisor?.close();
  }, 60_000);

  const seen: string[] = [];

  /** Runs one kind's race and holds it to SWAPS_PER_KIND swaps made while it ran. */
  const swapsSoFar = async () =>
    Number((await asRoot("cat /tmp/race-swaps 2>/dev/null || echo 0")).output.trim());
  async function racedBySwaps(
    kind: string,
    count: number,
    job: (i: number) => Promise<void>,
  ): Promise<number> {
    const before = await swapsSoFar();
    const done = await race(count, job);
    const swaps = (await swapsSoFar()) - before;
    expect(swaps, `swaps while the ${kind}s ran`).toBeGreaterThanOrEqual(SWAPS_PER_KIND);
    return done;
  }

  it(`reads ${SMALL_OPS} times and never returns a byte from outside the home`, {
    timeout: KIND_DEADLINE_MS + 60_000,
  }, async () => {
    const done = await racedBySwaps("read", SMALL_OPS, async (i) => {
      const path = `race/d/${NAMES[i % NAMES.length]}`;
      const data = await refusedOrDone("read", client.readFile(ref, path, { maxBytes: 1 << 20 }));
      if (data) seen.push(...leaks(Buffer.from(data).toString("utf8")).map((m) => `read ${path}: ${m}`));
    });
    expect(seen).toEqual([]);
    expect(done).toBe(SMALL_OPS);
    someSucceeded("read", done);
  });

  it(`lists ${SMALL_OPS} times and never shows a name from outside the home`, {
    timeout: KIND_DEADLINE_MS + 60_000,
  }, async () => {
    const done = await racedBySwaps("listing", SMALL_OPS, async () => {
      const entries = await refusedOrDone("listing", client.listFiles(ref, "race/d"));
      for (const entry of entries ?? []) {
        if (["outside-only", "etc", "proc", "hostname", "os-release"].includes(entry.name)) {
          seen.push(`listing: ${entry.name}`);
        }
      }
    });
    expect(seen).toEqual([]);
    expect(done).toBe(SMALL_OPS);
    someSucceeded("listing", done);
  });

  it(`writes ${SMALL_OPS} times and deletes ${SMALL_OPS} times, all inside the home`, {
    timeout: 2 * KIND_DEADLINE_MS + 60_000,
  }, async () => {
    const wrote = await racedBySwaps("write", SMALL_OPS, async (i) => {
      const path = `race/d/written-${TAG}-${i}`;
      await refusedOrDone("write", client.writeFile(ref, path, Buffer.from(`written ${i}\n`)));
    });
    const deleted = await racedBySwaps("delete", SMALL_OPS, async (i) => {
      const path = i % 2 === 0 ? "race/d/victim" : `race/d/written-${TAG}-${i}`;
      await refusedOrDone("delete", client.deleteFile(ref, path));
    });
    expect([wrote, deleted]).toEqual([SMALL_OPS, SMALL_OPS]);
    someSucceeded("write", wrote);
    someSucceeded("delete", deleted);
  });

  it(`downloads and uploads the home ${ARCHIVE_OPS} times each, all inside the home`, {
    timeout: 2 * KIND_DEADLINE_MS + 60_000,
  }, async () => {
    const downloaded = await racedBySwaps("download", ARCHIVE_OPS, async () => {
      const body = await refusedOrDone("download", client.exportHome(ref));
      // tar meeting a folder swapped for a symlink fails, and the body breaks off: no leak either
      const tar = body && (await new Response(body).arrayBuffer().catch(() => null));
      if (tar) seen.push(...leaks(Buffer.from(tar).toString("latin1")).map((m) => `download: ${m}`));
    });
    const uploaded = await racedBySwaps("upload", ARCHIVE_OPS, async (i) => {
      const tar = await homeTar(i);
      // an import whose staging folder was swapped for a symlink fails (and changes nothing)
      await refusedOrDone("upload", client.importHome(ref, new Blob([tar]).stream()));
    });
    expect(seen).toEqual([]);
    expect([downloaded, uploaded]).toEqual([ARCHIVE_OPS, ARCHIVE_OPS]);
    someSucceeded("download", downloaded);
    // uploads are not counted: the attacker swaps every staging folder it sees, and an import whose
    // staging folder was swapped is refused whole (the supervisor's suite shows imports succeed)
  });

  it("left nothing outside the home and nothing root-owned in it", { timeout: 120_000 }, async () => {
    await asRoot("touch /tmp/race-stop; sleep 1");
    const outside = await asRoot(
      `find / -xdev \\( -name 'written-${TAG}-*' -o -name '.cubicle-upload-*' -o -name 'imported-*' -o -name '.cubicle-import-*' \\) -print 2>/dev/null | grep -v '^/home/cubicle/' || true`,
    );
    expect(outside.output.trim()).toBe("");
    // as the computer's user: root in the computer may not read the home
    const rootOwned = await collectExec(container, ["find", "/home/cubicle", "-xdev", "-uid", "0", "-print"]);
    expect(rootOwned.stdout.toString("utf8").trim()).toBe("");
    const victims = await asRoot("ls /cubicle-race/victim /cubicle-race/outside-only");
    expect(victims.code).toBe(0);
  });
});
