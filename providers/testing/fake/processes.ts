/** The first pid handed out; low numbers would look like system processes. */
export const FIRST_PID = 1000;

/**
 * A machine's background processes. A process is alive from `spawn` until its body settles or it
 * is killed; each one also dies when the group it was started in (its run) is aborted, which is
 * how a timeout or an abort takes the whole tree down.
 */
export class ProcessTable {
  private nextPid = FIRST_PID;
  private readonly live = new Map<number, AbortController>();

  spawn(group: AbortSignal, body: (signal: AbortSignal) => Promise<unknown>): number {
    const pid = this.nextPid++;
    const controller = new AbortController();
    const killWithGroup = () => this.kill(pid);
    this.live.set(pid, controller);
    group.addEventListener("abort", killWithGroup, { once: true });
    if (group.aborted) this.kill(pid);
    body(controller.signal)
      .catch(() => {
        // A background process's failure has nowhere to go, as in a real shell.
      })
      .finally(() => {
        group.removeEventListener("abort", killWithGroup);
        if (this.live.get(pid) === controller) this.live.delete(pid);
      });
    return pid;
  }

  alive(pid: number): boolean {
    return this.live.has(pid);
  }

  /** False when no such process is alive. */
  kill(pid: number): boolean {
    const controller = this.live.get(pid);
    if (!controller) return false;
    this.live.delete(pid);
    controller.abort();
    return true;
  }

  killAll(): void {
    for (const pid of [...this.live.keys()]) this.kill(pid);
  }
}
