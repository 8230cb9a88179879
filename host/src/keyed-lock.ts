/**
 * Runs tasks for the same key one after another, within one process (two creates of one computer
 * must not race to make two containers; api serialises a computer's state changes with it too).
 * Other processes need their own guard: the engine's unique names here, the database in api.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.catch(() => undefined).then(task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      // forget the key once nothing else queued behind this task
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
