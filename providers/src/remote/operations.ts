import { type MachineRef, ProviderError, type SandboxProvider } from "../contract/index.ts";
import { breakAfterFirstChunk, type FaultPlan, truncateAfterFirstChunk } from "../kernel/faults.ts";
import { homeRelativePath } from "../kernel/home-path.ts";
import { runCommand } from "./commands.ts";
import { deleteFile, exportHome, importHome, listFiles, readFile, writeFile } from "./files.ts";
import { listHome } from "./listing.ts";
import type { SandboxMachine } from "./machine.ts";

export type SandboxOperations = Pick<
  SandboxProvider,
  "run" | "listFiles" | "readFile" | "writeFile" | "deleteFile" | "exportHome" | "listHome" | "importHome"
>;

/**
 * The contract's commands, files and home archives on a vendor's sandbox: the same for every
 * vendor once `running` has found the sandbox started (or failed as the contract says).
 */
export function sandboxOperations(
  running: (ref: MachineRef) => Promise<SandboxMachine>,
  faults: FaultPlan | undefined,
): SandboxOperations {
  return {
    async *run(ref, request) {
      if (request.cwd !== undefined) homeRelativePath(request.cwd);
      yield* runCommand(await running(ref), request);
    },

    listFiles: async (ref, path) => listFiles(await running(ref), path),
    readFile: async (ref, path, { maxBytes }) => readFile(await running(ref), path, maxBytes),
    writeFile: async (ref, path, data, options) => writeFile(await running(ref), path, data, options),
    deleteFile: async (ref, path) => deleteFile(await running(ref), path),

    async exportHome(ref, options) {
      const tar = await exportHome(await running(ref), options?.paths);
      return faults?.take("export") ? breakAfterFirstChunk(tar) : tar;
    },

    async listHome(ref) {
      let machine: SandboxMachine;
      try {
        machine = await running(ref);
      } catch (error) {
        // the contract's "cannot be listed now": the caller falls back to the whole export, which says why
        if (error instanceof ProviderError && error.code === "MACHINE_STOPPED") return null;
        throw error;
      }
      return listHome(machine);
    },

    async importHome(ref, tar) {
      const machine = await running(ref);
      await importHome(machine, faults?.take("import") ? truncateAfterFirstChunk(tar) : tar);
    },
  };
}
