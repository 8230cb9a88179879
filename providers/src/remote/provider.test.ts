import { describe, expect, it } from "vitest";
import { MAX_SCREENS, type MachineRef, ProviderError } from "../contract/index.ts";
import { type SandboxLayout, SandboxMachine } from "./machine.ts";
import { createRemoteProvider, type RemoteVendor } from "./provider.ts";
import type { SandboxShell } from "./shell.ts";

const LAYOUT: SandboxLayout = {
  userHome: "/home/user",
  user: { uid: 1000, gid: 1000 },
  displayBase: 0,
  webPortBase: 6080,
  vncPortBase: 5900,
};

interface Vm {
  id: string;
  state: "running" | "suspended";
}

/** A vendor whose machines live in a map; every call it gets is written to `calls`. */
function fakeVendor(options: { kitFails?: boolean } = {}) {
  const calls: string[] = [];
  const machines = new Map<string, Vm>();
  const shellOf = (vm: Vm): SandboxShell => ({
    async exec(command) {
      calls.push(`exec ${vm.id} ${command.split(" ").at(-1)}`);
      if (options.kitFails && command.startsWith("chmod")) return { exitCode: 1, stdout: "", stderr: "no" };
      return { exitCode: 0, stdout: "", stderr: "" };
    },
    stream: async () => 0,
    writeTexts: async () => undefined,
    upload: async () => undefined,
    download: async () => new Uint8Array(),
    downloadStream: async () => new ReadableStream(),
  });
  let due = true;
  const vendor: RemoteVendor<Vm, Vm> = {
    kind: "e2b-emulator",
    capabilities: { maxScreens: MAX_SCREENS, egress: ["open"] },
    layout: LAYOUT,
    terminal: "xterm",
    machineOf: (vm) => new SandboxMachine(vm.id, shellOf(vm), LAYOUT),
    reader: {
      async find(id) {
        calls.push(`find ${id}`);
        return machines.get(id) ?? null;
      },
      missing: (id) => new ProviderError("MACHINE_MISSING", `no machine ${id}`),
      isRunning: (vm) => vm.state === "running",
      attach: (vm) => vm,
    },
    lifetime: {
      due: () => due,
      async push(vm) {
        calls.push(`push ${vm.id}`);
        due = false;
      },
    },
    lifecycle: {
      noun: "sandbox",
      reconnect: async (id) => machines.get(id) ?? null,
      async create() {
        const vm: Vm = { id: `m${machines.size + 1}`, state: "running" };
        calls.push(`create ${vm.id}`);
        machines.set(vm.id, vm);
        return vm;
      },
      bringUp: async (vm) => vm,
      isSuspended: (vm) => vm.state === "suspended",
      async suspend(vm) {
        calls.push(`suspend ${vm.id}`);
        vm.state = "suspended";
      },
      async remove(vm) {
        calls.push(`remove ${vm.id}`);
        machines.delete(vm.id);
      },
    },
    screens: {
      requireScreen: () => undefined,
      view: async () => ({ kind: "vendor-websocket", url: "ws://screen" }),
      control: async () => ({ kind: "vendor-websocket", url: "ws://control" }),
      closeControl: async () => undefined,
      observe: async () => {
        throw new Error("not seen here");
      },
      act: async () => ({ completed: 0, total: 0 }),
    },
    setEgress: async () => undefined,
  };
  return { provider: createRemoteProvider(vendor), calls, machines };
}

const refOf = (providerRef: string | null): MachineRef => ({
  homeKey: "home",
  computerId: "computer",
  workspaceId: "workspace",
  providerRef,
});

describe("the remote providers' shared base", () => {
  it("removes a new machine that cannot be set up, and keeps the failure", async () => {
    const { provider, calls, machines } = fakeVendor({ kitFails: true });
    await expect(provider.provision(refOf(null))).rejects.toMatchObject({ code: "PROVIDER_FAILURE" });
    expect(calls.filter((call) => !call.startsWith("exec"))).toEqual(["create m1", "remove m1"]);
    expect(machines.size).toBe(0);
  });

  it("closes the browsers before suspending, and leaves a suspended machine alone", async () => {
    const { provider, calls } = fakeVendor();
    const { providerRef } = await provider.provision(refOf(null));
    calls.length = 0;
    await provider.stop(refOf(providerRef));
    expect(calls).toEqual([`find ${providerRef}`, `exec ${providerRef} close`, `suspend ${providerRef}`]);
    calls.length = 0;
    await provider.stop(refOf(providerRef));
    expect(calls).toEqual([`find ${providerRef}`]);
    expect(await provider.status(refOf(providerRef))).toBe("stopped");
  });

  it("pushes a used machine's lifetime forward when it is due, and refuses a suspended one", async () => {
    const { provider, calls } = fakeVendor();
    const ref = refOf((await provider.provision(refOf(null))).providerRef);
    calls.length = 0;
    await provider.openScreen(ref, 0);
    await provider.openScreen(ref, 0);
    expect(calls).toEqual([`find ${ref.providerRef}`, `push ${ref.providerRef}`, `find ${ref.providerRef}`]);
    await provider.stop(ref);
    await expect(provider.openScreen(ref, 0)).rejects.toMatchObject({ code: "MACHINE_STOPPED" });
    await expect(provider.listHome?.(ref)).resolves.toBeNull();
  });
});
