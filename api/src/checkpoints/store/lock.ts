/**
 * A readers–writer lock: writes of revisions share it, garbage collection takes it alone, so a
 * sweep never sees objects a write has stored but not yet named in a manifest.
 */
export class SharedExclusiveLock {
  private readers = 0;
  private writer = false;
  private readonly waiting: Array<{ exclusive: boolean; grant: () => void }> = [];

  async shared<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await work();
    } finally {
      this.readers -= 1;
      this.drain();
    }
  }

  async exclusive<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await work();
    } finally {
      this.writer = false;
      this.drain();
    }
  }

  private acquire(exclusive: boolean): Promise<void> {
    return new Promise((grant) => {
      this.waiting.push({ exclusive, grant });
      this.drain();
    });
  }

  private drain(): void {
    for (;;) {
      const next = this.waiting[0];
      if (!next || this.writer) return;
      if (next.exclusive) {
        if (this.readers > 0) return;
        this.writer = true;
      } else {
        this.readers += 1;
      }
      this.waiting.shift();
      next.grant();
    }
  }
}
