/**
 * Runs tasks with the same key one after another within this process: concurrent writes to one
 * stream (charges to one credit ledger, refreshes of one connection) would otherwise all read the
 * same revision and all but one would conflict. Across replicas, optimistic concurrency on the
 * stream (and any lease beside it) still decides.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
