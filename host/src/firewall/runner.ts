import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { exitCodeOf } from "../docker-exec.ts";
import { FrameDemuxer } from "../docker-frames.ts";
import { hostNameservers, nameserversIn } from "./nameservers.ts";

const TIMEOUT_MS = 30_000;

export class FirewallCommandError extends Error {
  override name = "FirewallCommandError";
}

/**
 * Where the firewall programs (iptables, iptables-restore, dmesg) of the supervisor (computers'
 * egress, the host firewall rule) and of the emulators' machines run: on this machine, or in the
 * Compose stack's `firewall` container, which shares the host's network namespace and holds only
 * the capabilities they need (README "Egress"). Chosen once at start (SUPERVISOR_FIREWALL_CONTAINER).
 */
export interface FirewallRunner {
  /** For messages: "this machine" or "container <name>". */
  readonly where: string;
  /** Runs a program to completion and returns its stdout; fails with its stderr unless it exits 0. */
  run(program: string, args: string[], input?: string): Promise<string>;
  /** Starts a program that runs until stopped, passing each line of its stdout on; `onEnd` when it ends. */
  follow(program: string, args: string[], onLine: (line: string) => void, onEnd: () => void): () => void;
  /** The host's IPv4 name servers a computer can reach (loopback ones left out). */
  nameservers(): Promise<string[]>;
}

export const localRunner: FirewallRunner = {
  where: "this machine",
  run: (program, args, input) =>
    new Promise((resolve, reject) => {
      const child = spawn(program, args, {
        stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        timeout: TIMEOUT_MS,
      });
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      child.once("error", (error) => reject(new FirewallCommandError(`${program}: ${error.message}`)));
      child.once("close", (code) => {
        if (code === 0) resolve(stdout);
        else reject(failure(program, args, code, stderr));
      });
      child.stdin?.end(input);
    }),
  follow(program, args, onLine, onEnd) {
    const child = spawn(program, args, { stdio: ["ignore", "pipe", "ignore"] });
    child.once("error", onEnd);
    child.once("exit", onEnd);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", onLine);
    // read for as long as the supervisor runs; it does not keep the process alive
    child.unref();
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    return () => child.kill();
  },
  nameservers: async () => hostNameservers(),
};

function failure(program: string, args: string[], code: number | null, stderr: string): FirewallCommandError {
  return new FirewallCommandError(`${program} ${args.join(" ")} failed (${code}): ${stderr.trim()}`);
}

/**
 * Runs the programs with `docker exec` in the named container (as its user, root, whose
 * capabilities are the container's). The supervisor already holds the Docker socket, so this gives
 * it no power it did not have; it only lets the supervisor itself run unprivileged.
 */
export function containerRunner(docker: Docker, name: string): FirewallRunner {
  const container = docker.getContainer(name);
  const start = async (cmd: string[], stdin: boolean) => {
    const exec = await container.exec({
      Cmd: cmd,
      AttachStdin: stdin,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    return { exec, stream: await exec.start({ hijack: true, stdin }) };
  };
  const run = async (program: string, args: string[], input?: string): Promise<string> => {
    const { exec, stream } = await start([program, ...args], input !== undefined).catch((error: unknown) => {
      throw new FirewallCommandError(
        `${program} in container ${name}: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    const demux = new FrameDemuxer();
    let stdout = "";
    let stderr = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.destroy();
        reject(new FirewallCommandError(`${program} in container ${name} did not finish in 30 s`));
      }, TIMEOUT_MS);
      stream.on("data", (chunk: Buffer) => {
        for (const piece of demux.push(chunk)) {
          if (piece.stream === "stderr") stderr += piece.data.toString();
          else stdout += piece.data.toString();
        }
      });
      stream.once("error", () => undefined);
      stream.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      stream.once("end", () => {
        clearTimeout(timer);
        resolve();
      });
      if (input !== undefined) stream.end(input);
    });
    const code = await exitCodeOf(exec);
    if (code !== 0) throw failure(program, args, code, stderr);
    return stdout;
  };
  return {
    where: `container ${name}`,
    run,
    follow(program, args, onLine, onEnd) {
      const lines = new PassThrough();
      createInterface({ input: lines }).on("line", onLine);
      let stream: (NodeJS.ReadableStream & { destroy(): void }) | null = null;
      let stopped = false;
      start([program, ...args], false).then(
        (started) => {
          stream = started.stream;
          if (stopped) return stream.destroy();
          const demux = new FrameDemuxer();
          stream.on("data", (chunk: Buffer) => {
            for (const piece of demux.push(chunk)) if (piece.stream === "stdout") lines.write(piece.data);
          });
          stream.once("error", () => undefined);
          stream.once("close", onEnd);
        },
        () => onEnd(),
      );
      // the program itself ends at its next write into the closed connection
      return () => {
        stopped = true;
        stream?.destroy();
      };
    },
    nameservers: () => run("cat", ["/etc/resolv.conf"]).then(nameserversIn, () => []),
  };
}
