import type { ProviderError } from "../contract/index.ts";

/**
 * A machine id no vendor hands out: looking it up costs one call, and a vendor checks the key before
 * it looks (a refused key fails; "no such machine" means the key was taken).
 */
export const ACCESS_PROBE_ID = "cubicle-access-check";

/** Calls to a vendor's SDK whose failures come out in Cubicle's words, by the vendor's translation. */
export function vendorCaller(translate: (what: string, error: unknown) => ProviderError) {
  return async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw translate(what, error);
    }
  };
}
