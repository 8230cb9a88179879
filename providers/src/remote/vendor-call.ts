import type { ProviderError } from "../contract/index.ts";

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
