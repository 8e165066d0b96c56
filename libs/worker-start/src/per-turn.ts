/**
 * Items sent together once a turn of the event loop: the first of a turn schedules the send (at
 * the turn's end), and the rest join it. Both sides of the webhook sender thread hand over through
 * one, and the event store's appends to its writer thread.
 */
export class PerTurn<T> {
  private items: T[] = [];

  constructor(private readonly send: (items: T[]) => void) {}

  add(item: T): void {
    if (this.items.length === 0) setImmediate(() => this.flush());
    this.items.push(item);
  }

  /** Sends what waits now (before a close). */
  flush(): void {
    const items = this.items;
    this.items = [];
    if (items.length > 0) this.send(items);
  }
}
