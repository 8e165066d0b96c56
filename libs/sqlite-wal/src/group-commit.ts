import Database from 'better-sqlite3';

/**
 * Group commit for a better-sqlite3 connection: the writes made in one turn of the event loop run
 * in one IMMEDIATE transaction (which takes the write lock before any of them reads), in the order
 * they were made, each in its own savepoint (a failing write fails alone). A commit writes every
 * page it changed to the WAL and, with `synchronous = FULL`, waits for the disk: one commit for
 * many small writes pays both once instead of once per write. A write resolves once committed.
 * The event store, the bus and the read store all write through one of these.
 */
export class GroupCommit {
  private group: Array<{ run: () => unknown; resolve(value: unknown): void; reject(error: unknown): void }> = [];
  private readonly commitGroup: Database.Transaction<(group: Array<{ run: () => unknown }>) => Array<{ ok: boolean; value?: unknown; error?: unknown }>>;

  constructor(db: Database.Database) {
    // Each savepoint journals the pages its write changes; past 64 KiB in a transaction SQLite
    // spills that journal to a temporary file (created, written and deleted on disk, a group of
    // writes after another), unless temporary storage is in memory. The journal of one group is
    // at most the pages it changes; the stores create no temporary tables of their own.
    db.pragma('temp_store = MEMORY');
    // Called inside commitGroup, better-sqlite3 runs it as a SAVEPOINT.
    const each = db.transaction((run: () => unknown) => run());
    this.commitGroup = db.transaction((group) =>
      group.map(({ run }) => {
        try {
          return { ok: true, value: each(run) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
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
    let outcomes: Array<{ ok: boolean; value?: unknown; error?: unknown }>;
    try {
      outcomes = this.commitGroup.immediate(group);
    } catch (error) {
      for (const write of group) write.reject(error);
      return;
    }
    group.forEach((write, i) => (outcomes[i].ok ? write.resolve(outcomes[i].value) : write.reject(outcomes[i].error)));
  }
}
