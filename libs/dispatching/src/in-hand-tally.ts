import { Logger } from '@nestjs/common';
import { Collection, ReadStore } from '@campaign-ops/read-store';

/** Operational state of the relay's work (no event gives it): the running count of what it settled in hand. */
export const DISPATCH_WORK_COLLECTION = 'dispatch_work';
const TALLY_ID = 'settled-in-hand';
/** While work settles in a process's hand, its count is saved this often for the other replicas' readings. */
export const TALLY_SAVE_EVERY_MS = 250;
/**
 * A process that settled work in hand this recently reads its own count (exact, and continuing
 * the stored one); one that has not (a replica not holding the relay, or one that lost it) reads
 * the stored count.
 */
const SETTLING_RECENTLY_MS = 5_000;

type TallyDocument = { id: string; settled: number };

/**
 * How many dispatches were settled in the relay's hand, counted across replicas and restarts:
 * the overload rule's pace for the work that never crosses the bus, which every replica judges
 * its launches by. The relay runs in one replica at a time (its lease); that replica continues
 * the stored count and saves it every TALLY_SAVE_EVERY_MS while it settles, with the count as the
 * document's revision, so a save can only move it forward (a late one from the replica that lost
 * the lease changes nothing). A count not saved when a process dies is at most that interval's:
 * the next holder continues from the saved one, and a reading that finds the count lower than
 * the one before starts the pace over (BacklogBound).
 */
export class InHandTally {
  private readonly logger = new Logger('dispatch-work');
  private readonly documents: Collection<TallyDocument>;
  /** The stored count this run of settling continues, once read (at its first save or reading). */
  private base: Promise<number> | null = null;
  private settledHere = 0;
  private lastSettledAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readStore: ReadStore,
    private readonly now: () => number = Date.now,
  ) {
    this.documents = readStore.collection<TallyDocument>(DISPATCH_WORK_COLLECTION);
  }

  /** One more dispatch settled in this process's hand. */
  settled(): void {
    // Settling again after a spell without (the relay back from another replica): the count goes
    // on from the one stored now, not from where this process left it. Its own count was saved by
    // the timer; if that save failed, those few are not counted and the pace reads that much behind.
    if (this.now() - this.lastSettledAt > SETTLING_RECENTLY_MS) {
      this.base = null;
      this.settledHere = 0;
    }
    this.settledHere++;
    this.lastSettledAt = this.now();
    if (this.timer) return;
    this.timer = setTimeout(() => void this.save(), TALLY_SAVE_EVERY_MS);
    this.timer.unref();
  }

  /** The count across replicas: this process's own while it settles work, else the stored one. */
  async count(): Promise<number> {
    if (this.now() - this.lastSettledAt > SETTLING_RECENTLY_MS) return this.stored();
    return (await this.continued()) + this.settledHere;
  }

  /** Saves this process's count now (a timer does it while work settles; a spec or a stop may ask). */
  async save(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.settledHere === 0) return;
    try {
      const count = (await this.continued()) + this.settledHere;
      await this.documents.upsert({ id: TALLY_ID, settled: count }, count);
    } catch (error) {
      // The next settle saves again; meanwhile the other replicas' pace reads a count behind.
      this.logger.warn(`the count of work settled in hand was not saved: ${(error as Error).message}`);
    }
  }

  private async stored(): Promise<number> {
    return (await this.documents.get(TALLY_ID))?.settled ?? 0;
  }

  private continued(): Promise<number> {
    if (this.base) return this.base;
    const reading = this.stored();
    this.base = reading;
    // Unread (the store unreachable): read again next time rather than continue from nothing.
    reading.catch(() => {
      if (this.base === reading) this.base = null;
    });
    return reading;
  }
}
