import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import {
  type CommandEvent,
  type CommandRequest,
  type EgressPolicy,
  type FileEntry,
  type MachineRef,
  ProviderError,
  type ProviderErrorCode,
  type SandboxProvider,
} from "../../src/contract/index.ts";
import type { ArmedFaults } from "../faults.ts";

/** One backend as the shared suites see it: the provider, its fault plan, and how to tear it down. */
export interface ProviderUnderTest {
  provider: SandboxProvider;
  faults: ArmedFaults;
  /** Screen targets are real VNC servers on this host, so the suites connect to them. */
  liveScreens?: boolean;
  /**
   * The egress policy the backend's enforcing side holds for the machine now (null: none), where
   * it can be asked: how the suite sees a policy outlive a stop.
   */
  appliedEgress?(ref: MachineRef): Promise<EgressPolicy | null>;
  /** The same backend given a credential it must refuse (absent: excused from "refuses-a-wrong-credential"). */
  withWrongCredential?(): SandboxProvider;
  cleanup(): Promise<void>;
}

export type MakeProvider = () => Promise<ProviderUnderTest>;

/** A generous but bounded budget for one case (real screens and real processes are slow to start). */
export const CASE_TIMEOUT_MS = 60_000;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A home key no other case (or concurrently running project) uses. */
export const uniqueHomeKey = (prefix = "conf") => `${prefix}-${randomBytes(6).toString("hex")}`;

export const bytes = (text: string) => new Uint8Array(Buffer.from(text, "utf8"));

export interface CollectedRun {
  stdout: string;
  stderr: string;
  exit: Extract<CommandEvent, { type: "exit" }>;
  events: CommandEvent[];
}

/**
 * Runs a command to its end. A provider that throws synchronously from `run` is turned into a
 * rejection, so callers can assert on errors the same way for every entry point.
 */
export async function collectRun(
  provider: SandboxProvider,
  ref: MachineRef,
  request: CommandRequest,
  onEvent?: (event: CommandEvent, soFar: { stdout: string; stderr: string }) => void,
): Promise<CollectedRun> {
  const events: CommandEvent[] = [];
  const soFar = { stdout: "", stderr: "" };
  for await (const event of provider.run(ref, request)) {
    events.push(event);
    if (event.type === "stdout") soFar.stdout += event.data;
    if (event.type === "stderr") soFar.stderr += event.data;
    onEvent?.(event, soFar);
  }
  const exits = events.filter((event) => event.type === "exit");
  expect(exits, `exactly one exit event for ${JSON.stringify(request.command)}`).toHaveLength(1);
  const last = events.at(-1);
  if (last?.type !== "exit") throw new Error(`the last event of ${request.command} was not its exit`);
  return { ...soFar, exit: last, events };
}

/** A Web ReadableStream read to its end into one Buffer (rejects when the stream errors). */
export async function readStream(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const reader = stream.getReader();
  const chunks: Buffer[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/** Bytes as a Web ReadableStream, delivered in a few chunks like a real upload. */
export function streamOf(data: Uint8Array, chunkSize = 4096): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= data.length) {
        controller.close();
        return;
      }
      controller.enqueue(data.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

/** Awaits `attempt` and asserts it failed with a ProviderError of `code` (and `message`, when given). */
export async function expectProviderError(
  attempt: Promise<unknown> | (() => Promise<unknown>),
  code: ProviderErrorCode,
  message?: string,
  label = "",
): Promise<ProviderError> {
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    const value = await (typeof attempt === "function" ? attempt() : attempt);
    outcome = { ok: true, value };
  } catch (error) {
    outcome = { ok: false, error };
  }
  const where = label ? `${label}: ` : "";
  if (outcome.ok) throw new Error(`${where}expected ProviderError ${code}, but the call succeeded`);
  const error = outcome.error;
  if (!(error instanceof ProviderError)) {
    throw new Error(`${where}expected ProviderError ${code}, got ${describeError(error)}`);
  }
  expect(error.code, `${where}error code (message: ${error.message})`).toBe(code);
  if (message !== undefined) expect(error.message, `${where}error message`).toBe(message);
  return error;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return JSON.stringify(error);
}

export interface SnapshotEntry {
  path: string;
  type: FileEntry["type"];
  executable: boolean;
  /** Files only: size and every byte (base64). */
  size?: number;
  content?: string;
}

/** The whole home, recursively: every entry's path, type and exec bit, and every file's bytes. */
export async function snapshotHome(
  provider: SandboxProvider,
  ref: MachineRef,
  dir = "",
): Promise<SnapshotEntry[]> {
  const out: SnapshotEntry[] = [];
  for (const entry of await provider.listFiles(ref, dir)) {
    // Dotfiles at the home's root are the desktop session's own state (browser profile, window
    // manager); they change by themselves while a graphical computer runs, so only the files the
    // test wrote are compared.
    if (dir === "" && entry.name.startsWith(".")) continue;
    if (entry.type === "directory") {
      out.push({ path: entry.path, type: entry.type, executable: entry.executable });
      out.push(...(await snapshotHome(provider, ref, entry.path)));
    } else if (entry.type === "file") {
      const data = await provider.readFile(ref, entry.path, { maxBytes: 16 * 1024 * 1024 });
      out.push({
        path: entry.path,
        type: entry.type,
        executable: entry.executable,
        size: entry.size,
        content: Buffer.from(data).toString("base64"),
      });
    } else {
      out.push({ path: entry.path, type: entry.type, executable: entry.executable });
    }
  }
  return out;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Checks the PNG signature and IHDR chunk; returns the image size the header declares. */
export function pngSize(png: Uint8Array): { width: number; height: number } {
  expect(png.length, "PNG length").toBeGreaterThan(33);
  expect([...png.subarray(0, 8)], "PNG signature").toEqual(PNG_SIGNATURE);
  const view = Buffer.from(png.buffer, png.byteOffset, png.byteLength);
  expect(view.toString("latin1", 12, 16), "first PNG chunk").toBe("IHDR");
  return { width: view.readUInt32BE(16), height: view.readUInt32BE(20) };
}

export const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** Retries `probe` until it returns true or `withinMs` passes; returns the last result. */
export async function eventually(probe: () => Promise<boolean>, withinMs: number, everyMs = 100) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

/**
 * Machines the cases made: each case's own, destroyed after it, and one shared machine kept for
 * the whole suite.
 */
export class Machines {
  private refs: MachineRef[] = [];
  private sharedOne: Promise<MachineRef> | undefined;

  constructor(private readonly provider: () => SandboxProvider) {}

  /** A new machine for a new home key; asserts it came up fresh. */
  async fresh(prefix = "conf"): Promise<MachineRef> {
    return this.track(await this.provisioned(prefix));
  }

  /**
   * One machine for the cases that only run commands and read and write files of their own names
   * (a machine costs seconds to make, tens on a vendor): made at the first such case and kept
   * until `destroyAll({ shared: true })`. A case that stops the machine, replaces its home, or
   * uses its screens or browsers takes a fresh one.
   */
  shared(): Promise<MachineRef> {
    this.sharedOne ??= this.provisioned("shared").catch((error: unknown) => {
      this.sharedOne = undefined;
      throw error;
    });
    return this.sharedOne;
  }

  track(ref: MachineRef): MachineRef {
    this.refs.push(ref);
    return ref;
  }

  /** The cases' own machines; with `shared`, the shared one too. */
  async destroyAll({ shared = false } = {}): Promise<void> {
    const refs = this.refs;
    this.refs = [];
    if (shared && this.sharedOne) {
      const one = await this.sharedOne.catch(() => null);
      this.sharedOne = undefined;
      if (one) refs.push(one);
    }
    for (const ref of refs) {
      try {
        await this.provider().destroy(ref);
      } catch {
        // Already gone, or the case broke the machine on purpose; cleanup is best effort.
      }
    }
  }

  private async provisioned(prefix: string): Promise<MachineRef> {
    const homeKey = uniqueHomeKey(prefix);
    const provisioned = await this.provider().provision(testRef(homeKey, null));
    expect(provisioned.fresh, "provision of a new home key is fresh").toBe(true);
    expect(typeof provisioned.providerRef).toBe("string");
    return testRef(homeKey, provisioned.providerRef);
  }
}

/** A machine reference as the control plane would make one, for a test-only computer. */
export function testRef(homeKey: string, providerRef: string | null): MachineRef {
  return {
    homeKey,
    providerRef,
    computerId: `computer-${homeKey}`,
    workspaceId: "workspace-provider-suites",
  };
}
