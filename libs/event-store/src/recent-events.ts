import type { EventRow } from './sqlite-event-rows';

/**
 * The last events this store committed, in position order and without a gap: what an up-to-date
 * subscription reads next, handed to it without reading the file (each append woke the
 * subscriptions of its stream, and each read a batch of the events just written). Only a stretch
 * this store wrote itself, with no position missing, is answered: another process's append (a gap)
 * starts it over, and what it does not hold entirely is read from the file as before.
 */
export class RecentEvents {
  private rows: EventRow[] = [];

  constructor(private readonly capacity: number) {
    if (!(Number.isSafeInteger(capacity) && capacity > 0)) throw new Error(`capacity must be a positive integer, got ${capacity}`);
  }

  /** The rows of one append, once committed, in position order. */
  add(rows: readonly EventRow[]): void {
    if (rows.length === 0) return;
    const last = this.rows.length > 0 ? this.rows[this.rows.length - 1].position : null;
    // Appended elsewhere in between (or a stretch that is not one): what is held no longer joins up.
    if (last !== null && rows[0].position !== last + 1) this.rows = [];
    for (let i = 1; i < rows.length; i++) {
      if (rows[i].position !== rows[i - 1].position + 1) {
        this.rows = [];
        return;
      }
    }
    this.rows.push(...rows);
    // Trimmed in chunks, not at every add.
    if (this.rows.length >= 2 * this.capacity) this.rows = this.rows.slice(-this.capacity);
  }

  /** Every event with a position in (after, upTo], oldest first; null unless all of them are held. */
  between(after: number, upTo: number): EventRow[] | null {
    if (this.rows.length === 0 || upTo <= after) return null;
    const first = this.rows[0].position;
    const last = this.rows[this.rows.length - 1].position;
    if (after + 1 < first || upTo > last) return null;
    return this.rows.slice(after + 1 - first, upTo - first + 1);
  }
}
