/**
 * The Daytona adapter's provision against the loopback Daytona emulator (real desktop containers,
 * the unmodified SDK): what it does to a sandbox that was stopped.
 */
import { randomUUID } from "node:crypto";
import { type DaytonaEmulator, startDaytonaEmulator } from "@cubicle/emulators/daytona";
import { Daytona } from "@daytonaio/sdk";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDaytonaProvider } from "../../src/daytona/index.ts";

let emulator: DaytonaEmulator;
let daytona: Daytona;

beforeAll(async () => {
  emulator = await startDaytonaEmulator({ instance: `provision-${randomUUID().slice(0, 8)}` });
  daytona = new Daytona({ apiKey: emulator.apiKey, apiUrl: emulator.apiUrl, target: emulator.target });
});

afterAll(async () => {
  await daytona?.[Symbol.asyncDispose]();
  await emulator?.close({ removeSandboxes: true });
});

it("forgets the screen servers of the boot before a stop, whose pids new processes may have", async () => {
  const provider = createDaytonaProvider({
    kind: "daytona-emulator",
    connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl, target: emulator.target },
  });
  const ref = {
    homeKey: randomUUID(),
    computerId: randomUUID(),
    workspaceId: randomUUID(),
    providerRef: null as string | null,
  };
  ref.providerRef = (await provider.provision(ref)).providerRef;
  const sandbox = await daytona.get(ref.providerRef);
  const viewServer = async () =>
    (
      await sandbox.process.executeCommand(
        'f=.cubicle/run/screens/0/view.pid; [ -e $f ] || { echo none; exit; }; tr "\\0" " " < "/proc/$(cat $f)/cmdline" 2>/dev/null || echo "gone $(cat $f)"',
      )
    ).result;
  await provider.openScreen(ref, 0);
  expect(await viewServer()).toMatch(/^x11vnc /);

  await provider.stop(ref);
  expect((await provider.provision(ref)).fresh).toBe(false);
  // no pid of the earlier boot is left for `screen view` to take for its server and kill
  expect(await viewServer()).toBe("none\n");
  await provider.openScreen(ref, 0);
  expect(await viewServer()).toMatch(/^x11vnc /);
}, 120_000);
