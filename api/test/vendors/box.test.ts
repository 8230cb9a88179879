import { type BoxEmulator, QUICK_TIMINGS, startBoxEmulator } from "@cubicle/emulators/box";
import { describe, expect, it } from "vitest";
import { vendorApiSuite } from "../../testing/vendor-api-suite.ts";

/**
 * The api on SANDBOX_PROVIDER=box, configured only by BOX_API_KEY and BOX_API_URL, against the
 * loopback Box emulator (Box's REST API through Cubicle's own client): the shared vendor suite,
 * with idle suspension as an archive and a resume of the same box; then what Box alone asks for,
 * that no box Cubicle makes or resumes gets the account's secrets.
 * (A *.postgres test: run once, on the production dialect; boxes are heavy.)
 */
const box = vendorApiSuite<BoxEmulator>({
  name: "Box",
  kind: "box",
  keyVariable: "BOX_API_KEY",
  wrongKey: "box_wrong_key",
  states: { running: "ready", stopped: "archived" },
  // Box's states pass quickly: the emulator's own suite holds them for Box's time
  start: (instance) => startBoxEmulator({ instance, timings: QUICK_TIMINGS }),
  env: (emulator, apiKey) => ({ BOX_API_KEY: apiKey, BOX_API_URL: emulator.apiUrl }),
  machine: async (emulator, ref) => {
    const found = (await emulator.boxes()).find(({ id }) => id === ref);
    return found && { id: found.id, state: found.state };
  },
  forget: (emulator, ref) => emulator.forget(ref),
  close: (emulator) => emulator.close({ removeBoxes: true }),
});

describe("the Box account's secrets", () => {
  it("never reach a box: every create and every resume said noEnv", () => {
    // Box puts the account's environment secrets into a box unless told noEnv; a key given to
    // Cubicle must never expose them to a machine a bot runs on. This runs after the lifecycle
    // cases above, so the creates and resumes of idle suspension and of replacement are all here.
    const requests = box.emulator().requests();
    const creates = requests.filter(({ method, path }) => method === "POST" && path === "/api/box/v1/boxes");
    const resumes = requests.filter(
      ({ method, path }) => method === "POST" && /^\/api\/box\/v1\/boxes\/[^/]+\/resume$/.test(path),
    );
    expect(creates.length, "boxes created").toBeGreaterThan(0);
    expect(resumes.length, "boxes resumed").toBeGreaterThan(0);
    for (const request of [...creates, ...resumes]) {
      expect(request.body, `${request.method} ${request.path}`).toMatchObject({ noEnv: true });
    }
  });
});
