/**
 * Ends a bench that is interrupted or runs past its deadline, after its clean-up has run: a bench
 * starts containers and processes that must not outlive it, and a hung step must not keep it alive.
 * `aborting` tells the bench's own error handling that the failures it now sees are the clean-up's.
 */
export function onAbort(
  name: string,
  deadlineMs: number,
  cleanUp: () => Promise<void>,
): { readonly aborting: boolean } {
  const state = { aborting: false };
  const abort = (why: string, code: number) => {
    state.aborting = true;
    console.error(`${name} ${why}`);
    void cleanUp().finally(() => process.exit(code));
  };
  process.once("SIGINT", () => abort("interrupted", 130));
  process.once("SIGTERM", () => abort("terminated", 143));
  process.once("SIGHUP", () => abort("hung up", 129));
  setTimeout(() => abort(`did not finish in ${deadlineMs / 1000} s`, 1), deadlineMs).unref();
  return state;
}
