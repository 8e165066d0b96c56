import Database from 'better-sqlite3';

/**
 * Group commit for a better-sqlite3 connection: the writes made in one turn of the event loop run
 * in one IMMEDIATE transaction (which takes the write lock before any of them reads), in the order
 * they were made, and a failing write fails alone. A commit writes every page it changed to the
 * WAL and, with `synchronous = FULL`, waits for the disk: one commit for many small writes pays
 * both once instead of once per write. A write resolves once committed. The event store, the bus
 * and the read store all write through one of these.
 *
 * Most groups have no failing write, so they run straight in the transaction. Only when one
 * throws is the transaction rolled back and the group run again with each write in a savepoint of
 * its own (which takes back what a failing write did, and only that): a savepoint pair per write
 * was about a tenth of a small write's cost (measured: 28 against 25 µs a write, groups of 26).
 * So a write may run twice; a write is SQL on this connection, with nothing outside it to undo.
 */
export class GroupCommit {
  private group: Array<Write & { resolve(value: unknown): void; reject(error: unknown): void }> = [];
  /** Every write of the group in the transaction, as it is: throws a WriteFailed when one does. */
  private readonly commitAll: Database.Transaction<(group: Write[]) => unknown[]>;
  /** Every write of the group in a savepoint of its own, in the transaction: its outcome each. */
  private readonly commitEach: Database.Transaction<(group: Write[]) => Outcome[]>;

  constructor(db: Database.Database) {
    // Each savepoint journals the pages its write changes; past 64 KiB in a transaction SQLite
    // spills that journal to a temporary file (created, written and deleted on disk, a group of
    // writes after another), unless temporary storage is in memory. The journal of one group is
    // at most the pages it changes; the stores create no temporary tables of their own.
    db.pragma('temp_store = MEMORY');
    this.commitAll = db.transaction((group) =>
      group.map(({ run }) => {
        try {
          return run();
        } catch (error) {
          throw new WriteFailed(error);
        }
      }),
    );
    // Called inside commitEach, better-sqlite3 runs it as a SAVEPOINT.
    const each = db.transaction((run: () => unknown) => run());
    this.commitEach = db.transaction((group) => {
      let aborted: unknown = null;
      return group.map(({ run }) => {
        // A write whose error made SQLite roll the whole transaction back (a full disk, an I/O
        // error) ends it: the writes after it are not run, which would each commit on their own.
        if (aborted !== null) return { ok: false, error: aborted };
        try {
          return { ok: true, value: each(run) };
        } catch (error) {
          if (!db.inTransaction) aborted = error;
          return { ok: false, error };
        }
      });
    });
  }

  write<R>(run: () => R): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.group.length === 0) setImmediate(() => this.flush());
      this.group.push({ run, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Writes are waiting for the next commit. */
  get queued(): boolean {
    return this.group.length > 0;
  }

  /** Commits what is queued now (also called before the database closes). */
  flush(): void {
    const group = this.group;
    this.group = [];
    if (group.length === 0) return;
    let outcomes: Outcome[];
    try {
      outcomes = this.commit(group);
    } catch (error) {
      for (const write of group) write.reject(error);
      return;
    }
    group.forEach((write, i) => (outcomes[i].ok ? write.resolve(outcomes[i].value) : write.reject(outcomes[i].error)));
  }

  /** The outcome of each write, committed; throws when the transaction itself fails (its begin or commit). */
  private commit(group: Write[]): Outcome[] {
    try {
      return this.commitAll.immediate(group).map((value) => ({ ok: true, value }));
    } catch (error) {
      if (!(error instanceof WriteFailed)) throw error;
      // Rolled back: nothing of the group was written. A group of one has its outcome already.
      if (group.length === 1) return [{ ok: false, error: error.cause }];
      return this.commitEach.immediate(group);
    }
  }
}

/** A write of a group: SQL on the connection, run in the group's transaction. */
type Write = { run: () => unknown };
type Outcome = { ok: boolean; value?: unknown; error?: unknown };

/** A write of the group threw (not the transaction's begin or commit): the group is run again, each write in its savepoint. */
class WriteFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('a write of the group failed');
  }
}
