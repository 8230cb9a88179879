/**
 * What keeps garbage collection off the objects of writes in flight: writes of revisions share
 * it, a sweep takes it alone, so a sweep never sees objects a write has stored or decided to reuse
 * but not yet named in a manifest. Across api replicas it is api/src/checkpoints/replica-lock.ts.
 */
export interface StoreLock {
  shared<T>(work: () => Promise<T>): Promise<T>;
  exclusive<T>(work: () => Promise<T>): Promise<T>;
}

/** A readers–writer lock within one process; a waiting sweep goes before writes that come later. */
export class SharedExclusiveLock implements StoreLock {
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
