import { DEFAULT_EGRESS, type DesktopAction } from "@cubicle/providers/contract";
import type { ExecRequest } from "@cubicle/providers/supervisor-wire";
import type { ComputerRef, ContainerManager } from "../containers/manager.ts";

export interface StubCall {
  method: string;
  ref?: ComputerRef;
  args?: unknown[];
}

const unused = (method: string) => () =>
  Promise.reject(new Error(`the stub manager's ${method} was not expected`));

/** A ContainerManager for route tests: records calls, answers plainly, touches nothing. */
export function stubManager(): ContainerManager & { calls: StubCall[] } {
  const calls: StubCall[] = [];
  return {
    calls,
    health: async () => ({
      ok: true,
      docker: "ok",
      image: { ref: "cubicle-computer:latest", id: "sha256:stub" },
      hostFirewall: "on",
      egress: "on",
    }),
    diagnose: unused("diagnose"),
    create: async (ref) => {
      calls.push({ method: "create", ref });
      return { providerRef: "container-id", fresh: true, homeCreated: true, state: "running" };
    },
    status: async (ref) => {
      calls.push({ method: "status", ref });
      return { homeKey: ref.homeKey, status: "missing", providerRef: null, screens: [], ports: {} };
    },
    list: async () => [],
    stop: unused("stop"),
    setEgress: async (ref, policy) => {
      calls.push({ method: "setEgress", ref, args: [policy] });
    },
    egress: async (ref, after) => {
      calls.push({ method: "egress", ref, args: [after] });
      return { policy: DEFAULT_EGRESS, report: { refusedTotal: 0, refusals: [], cursor: "c.0" } };
    },
    close: async () => undefined,
    destroy: unused("destroy"),
    reconcile: async (keep) => {
      calls.push({ method: "reconcile", args: [[...keep]] });
      return [];
    },
    exec: async (ref, request: ExecRequest) => {
      calls.push({ method: "exec", ref, args: [request] });
      return (async function* () {
        yield { type: "stdout" as const, data: "hi\n" };
        yield { type: "exit" as const, code: 0, truncated: false };
      })();
    },
    openPath: unused("openPath"),
    writeFile: unused("writeFile"),
    deleteFile: unused("deleteFile"),
    exportHome: async (ref, options) => {
      calls.push({ method: "exportHome", ref, args: [options] });
      return new Blob([new Uint8Array(1024)]).stream();
    },
    listHome: unused("listHome"),
    importHome: unused("importHome"),
    settleBrowsers: async (ref) => {
      calls.push({ method: "settleBrowsers", ref });
    },
    closeBrowsers: async (ref) => {
      calls.push({ method: "closeBrowsers", ref });
    },
    openScreen: async (ref, index) => {
      calls.push({ method: "openScreen", ref, args: [index] });
      return {
        index,
        display: `:${index + 1}`,
        host: "127.0.0.1",
        viewPort: 40_000 + index,
        viewPassword: "password",
      };
    },
    closeScreen: unused("closeScreen"),
    openControl: unused("openControl"),
    closeControl: unused("closeControl"),
    observe: unused("observe"),
    act: async (ref, index, actions: DesktopAction[]) => {
      calls.push({ method: "act", ref, args: [index, actions] });
      return { completed: actions.length, total: actions.length };
    },
  };
}
