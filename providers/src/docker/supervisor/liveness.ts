/**
 * A supervisor that stops answering (a stopped or wedged process, a host under water) still has
 * its connections accepted by the kernel, so a call to it waits for as long as it stays so. A
 * deadline per call cannot tell that from a call that rightly takes minutes (creating a computer,
 * settling its browsers, a large archive, a long command). Instead, while any call is in flight,
 * the client asks the supervisor every `everyMs` whether it answers at all (`GET /alive`, which
 * touches nothing); when no answer comes within `withinMs`, every call in flight is failed.
 */
export class Liveness {
  private readonly inFlight = new Set<AbortController>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    /** One question to the supervisor; any answer, whatever its status, means it runs. */
    private readonly probe: (signal: AbortSignal) => Promise<void>,
    private readonly timing: { everyMs: number; withinMs: number },
  ) {}

  /** A signal that aborts when the supervisor stops answering; `done` once the call, body included, is over. */
  watch(): { signal: AbortSignal; done(): void } {
    const controller = new AbortController();
    this.inFlight.add(controller);
    this.schedule();
    return {
      signal: controller.signal,
      done: () => {
        this.inFlight.delete(controller);
      },
    };
  }

  private schedule(): void {
    if (this.timer !== null || this.inFlight.size === 0) return;
    this.timer = setTimeout(() => void this.check(), this.timing.everyMs);
    // a watch alone must not keep a process alive
    this.timer.unref();
  }

  private async check(): Promise<void> {
    let answered = true;
    try {
      await this.probe(AbortSignal.timeout(this.timing.withinMs));
    } catch {
      answered = false;
    }
    this.timer = null;
    if (!answered) {
      const lost = new Error(`the supervisor did not answer within ${this.timing.withinMs} ms`);
      for (const controller of this.inFlight) controller.abort(lost);
      this.inFlight.clear();
    }
    this.schedule();
  }
}
