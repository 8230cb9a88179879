import { type ChildProcess, spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ConfigError, type RunningService, runService, type ServiceProcess } from "./index.ts";

/** A stand-in for `process`: records exits and lets the test send signals. */
function fakeProcess() {
  const listeners = new Map<string, () => void>();
  const exits: number[] = [];
  const lines: string[] = [];
  let exited: (code: number) => void = () => {};
  const exitedOnce = new Promise<number>((resolve) => {
    exited = resolve;
  });
  const host: ServiceProcess = {
    once(signal, listener) {
      listeners.set(signal, listener);
    },
    exit(code) {
      exits.push(code);
      exited(code);
    },
  };
  const options = { process: host, log: (line: string) => lines.push(line) };
  return { options, listeners, exits, lines, exitedOnce };
}

describe("runService", () => {
  it("starts the service and closes it on SIGTERM, exiting 0", async () => {
    const fake = fakeProcess();
    let closed = 0;
    const service: RunningService = {
      close: async () => {
        closed += 1;
      },
    };
    await runService("thing", async () => service, fake.options);
    expect([...fake.listeners.keys()].sort()).toEqual(["SIGINT", "SIGTERM"]);
    expect(fake.exits).toEqual([]);
    fake.listeners.get("SIGTERM")?.();
    expect(await fake.exitedOnce).toBe(0);
    expect(closed).toBe(1);
    expect(fake.lines).toEqual([]);
  });

  it("closes on SIGINT too", async () => {
    const fake = fakeProcess();
    await runService("thing", async () => ({ close: async () => {} }), fake.options);
    fake.listeners.get("SIGINT")?.();
    expect(await fake.exitedOnce).toBe(0);
  });

  it("prints every configuration problem as one paragraph and exits 78", async () => {
    const fake = fakeProcess();
    await runService(
      "API",
      async () => {
        throw new ConfigError(["PORT: must be an integer", "DATA_DIR: missing"]);
      },
      fake.options,
    );
    expect(fake.exits).toEqual([78]);
    expect(fake.lines).toEqual([
      "Cubicle API cannot start; fix its configuration:\nPORT: must be an integer\nDATA_DIR: missing",
    ]);
    expect(fake.listeners.size).toBe(0);
  });

  it("prints any other failure as one line and exits 1", async () => {
    const fake = fakeProcess();
    await runService(
      "proxy",
      async () => {
        throw new Error("listen EADDRINUSE: address already in use 127.0.0.1:3200");
      },
      fake.options,
    );
    await runService("supervisor", () => Promise.reject("not an Error"), fake.options);
    expect(fake.exits).toEqual([1, 1]);
    expect(fake.lines).toEqual([
      "Cubicle proxy cannot start: listen EADDRINUSE: address already in use 127.0.0.1:3200",
      "Cubicle supervisor cannot start: not an Error",
    ]);
  });

  it("exits 1 with one line when closing fails", async () => {
    const fake = fakeProcess();
    await runService(
      "supervisor",
      async () => ({
        close: async () => {
          throw new Error("stuck");
        },
      }),
      fake.options,
    );
    fake.listeners.get("SIGTERM")?.();
    expect(await fake.exitedOnce).toBe(1);
    expect(fake.lines).toEqual(["Cubicle supervisor did not stop cleanly: stuck"]);
  });
});

describe("runService in a real process", () => {
  const index = new URL("./index.ts", import.meta.url).pathname;

  /** Runs `body` as a module in a child Node that imports this package; resolves once it exits. */
  function child(body: string, onOutput?: (child: ChildProcess, text: string) => void) {
    const spawned = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { ConfigError, runService } from ${JSON.stringify(index)};\n${body}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      onOutput?.(spawned, output);
    };
    spawned.stdout.on("data", collect);
    spawned.stderr.on("data", collect);
    return new Promise<{ code: number | null; output: string }>((resolve) =>
      spawned.on("exit", (code) => resolve({ code, output })),
    );
  }

  it("exits 78 with the paragraph on a ConfigError", async () => {
    const { code, output } = await child(
      'await runService("proxy", async () => { throw new ConfigError(["PROXY_PORT is bad", "LOG_LEVEL is bad"]); });',
    );
    expect(code).toBe(78);
    expect(output).toBe(
      "Cubicle proxy cannot start; fix its configuration:\nPROXY_PORT is bad\nLOG_LEVEL is bad\n",
    );
  });

  it("closes the service on SIGTERM and exits 0", async () => {
    const { code, output } = await child(
      `const timer = setInterval(() => {}, 1000);
      await runService("supervisor", async () => ({
        close: async () => { clearInterval(timer); console.log("closed"); },
      }));
      console.log("started");`,
      (spawned, text) => {
        if (text === "started\n") spawned.kill("SIGTERM");
      },
    );
    expect(output).toBe("started\nclosed\n");
    expect(code).toBe(0);
  });
});
