import type { ContentfulStatusCode } from "hono/utils/http-status";

export const PROVIDER_ERROR_STATUS = {
  SANDBOX_DISABLED: 503,
  NOT_AVAILABLE_YET: 501,
  GRAPHICAL_UNAVAILABLE: 409,
  MULTI_SCREEN_UNAVAILABLE: 409,
  MACHINE_MISSING: 409,
  MACHINE_STOPPED: 409,
  PATH_OUTSIDE_HOME: 400,
  FILE_NOT_FOUND: 404,
  FILE_TOO_LARGE: 413,
  NOT_A_FILE: 400,
  NOT_A_DIRECTORY: 400,
  INVALID_PATH: 400,
  INVALID_ACTIONS: 400,
  INVALID_SCREEN: 400,
  INVALID_PASSWORD: 400,
  PROVIDER_FAILURE: 502,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ProviderErrorCode = keyof typeof PROVIDER_ERROR_STATUS;

/** Every provider failure callers can act on; the API maps `code` to problem JSON. */
export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ProviderError";
  }

  get status(): ContentfulStatusCode {
    return PROVIDER_ERROR_STATUS[this.code];
  }
}

export const outsideHome = () =>
  new ProviderError("PATH_OUTSIDE_HOME", "path is outside this computer's home");
export const tooLarge = (maxBytes: number) =>
  new ProviderError("FILE_TOO_LARGE", `computer file exceeds ${maxBytes} bytes`);
