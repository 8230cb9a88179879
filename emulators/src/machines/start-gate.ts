/**
 * Keeps process starts and freezes of one container apart. An exec the engine starts while the
 * container is being frozen never gets going (`runc init` waits in the frozen cgroup) and holds the
 * container's lock, so even inspect and unpause hang after it. So a freeze waits for the starts in
 * progress, and starts wait for the freeze; once frozen, the engine refuses new execs at once.
 */
export class StartGate {
  private starting = 0;
  private whenIdle: Array<() => void> = [];
  private freezing: Promise<void> | null = null;

  /** Runs a process start, after any freeze in progress. */
  async start<T>(begin: () => Promise<T>): Promise<T> {
    while (this.freezing) await this.freezing;
    this.starting++;
    try {
      return await begin();
    } finally {
      this.starting--;
      if (this.starting === 0) for (const wake of this.whenIdle.splice(0)) wake();
    }
  }

  /** Runs a freeze (pause, stop) once no start is in progress; starts wait for it. */
  async freeze<T>(change: () => Promise<T>): Promise<T> {
    while (this.freezing) await this.freezing;
    let done = () => {};
    this.freezing = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      while (this.starting > 0) await new Promise<void>((resolve) => this.whenIdle.push(resolve));
      return await change();
    } finally {
      this.freezing = null;
      done();
    }
  }
}
