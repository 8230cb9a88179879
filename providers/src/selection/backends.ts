import { boxBackend, boxEmulatorBackend } from "../box/backend.ts";
import { daytonaBackend, daytonaEmulatorBackend } from "../daytona/backend.ts";
import { desktopBackend } from "../desktop/backend.ts";
import { dockerBackend } from "../docker/backend.ts";
import { e2bBackend, e2bEmulatorBackend } from "../e2b/backend.ts";
import { noneBackend } from "../none/backend.ts";
import type { Backend, BackendVariable } from "./backend.ts";

/** The fake lives with the test doubles, which production images leave out: loaded only when asked for. */
const fakeBackend: Backend = {
  testOnly: true,
  async build() {
    const { createFakeProvider } = await import("../../testing/fake/index.ts");
    return createFakeProvider();
  },
};

/**
 * Every backend by its SANDBOX_PROVIDER value, one line each, in the order they are named to the
 * owner. Adding a backend is its folder (with its row, `backend.ts`) and one line here.
 */
export const BACKENDS = {
  docker: dockerBackend,
  e2b: e2bBackend,
  daytona: daytonaBackend,
  box: boxBackend,
  desktop: desktopBackend,
  none: noneBackend,
  fake: fakeBackend,
  "e2b-emulator": e2bEmulatorBackend,
  "daytona-emulator": daytonaEmulatorBackend,
  "box-emulator": boxEmulatorBackend,
} as const satisfies Record<string, Backend>;

export type ProviderKind = keyof typeof BACKENDS;

/** Every value SANDBOX_PROVIDER takes. */
export const PROVIDER_KINDS = Object.keys(BACKENDS) as [ProviderKind, ...ProviderKind[]];

/** Every backend's own variables, each once: what the api's configuration reads for them. */
export const BACKEND_VARIABLES: readonly BackendVariable[] = [
  ...new Map(
    Object.values(BACKENDS as Record<string, Backend>)
      .flatMap((backend) => backend.variables ?? [])
      .map((variable) => [variable.name, variable]),
  ).values(),
];
