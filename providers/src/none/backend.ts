import { ProviderError } from "../contract/index.ts";
import type { Backend } from "../selection/backend.ts";
import { createRefusingProvider } from "./index.ts";

/** `none`: no computers at all (also what a remote backend without its key runs as). */
export const noneBackend: Backend = {
  build: async () =>
    createRefusingProvider(
      "none",
      () =>
        new ProviderError(
          "SANDBOX_DISABLED",
          "Computers are disabled: SANDBOX_PROVIDER is none, or a remote provider has no API key.",
        ),
    ),
};
