// The SQLite read store itself: opening the file, its collections, rebuilds into stand-ins and the
// swap. Collections are in sqlite-collection.ts, filters in sqlite-filter.ts, checkpoints and leases
// in sqlite-checkpoints.ts.
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS, GroupCommit, openWal } from '@campaign-ops/sqlite-wal';
import type { CheckpointStore, Collection, CollectionOptions, Doc, ReadModelRebuild, ReadStore, RebuildSpec } from './read-store.port';
import { StandInWriter } from './rebuild-writer';
import { existingIndexKeys, indexFields, quoteIdentifier, SqliteCollection, Statement } from './sqlite-collection';
import { fieldValue } from './sqlite-filter';
import { SqliteCheckpointStore } from './sqlite-checkpoints';

/**
 * SQLite adapter of the read store, for the embedded (single host) deployment.
 *
 * Layout: one table per collection (`coll_<name>`: `id`, `revision`, `doc` as JSON text) and a
 * `checkpoints` table. Filters run on `json_extract(doc, '$.field')`, and every declared index is
 * an expression index on exactly that expression followed by `id`, so that equality filters,
 * the id ordering and the `startingAfter` cursor are all served by one index (a compound index:
 * the same expressions of each of its fields, in order, then `id`).
 *
 * Several processes may open the same file: WAL lets readers run beside the writer, the busy
 * timeout makes writers wait for each other instead of failing, and every read-modify-write runs
 * in an IMMEDIATE transaction (it takes the write lock before reading, so two processes can never
 * both read the same row and both write it, and a deferred transaction never has to be upgraded,
 * which in WAL mode fails at once with SQLITE_BUSY instead of waiting).
 */

/** Prepared statements are cached by SQL text; the cap only guards against unbounded query shapes. */
const STATEMENT_CACHE_SIZE = 500;
/**
 * How often the store refreshes SQLite's statistics (`PRAGMA optimize`, which analyzes only the
 * tables that changed enough since). Without them SQLite picks among a filter's indexes blindly:
 * fan-out's endpoints of an account were searched through the index on `deleted`, every endpoint
 * of every account read (218 µs a query against 68 µs through `account_id`, on 79 endpoints).
 */
const OPTIMIZE_INTERVAL_MS = 30_000;

const COLLECTION_NAME = /^[a-z_][a-z0-9_]*$/;
/** Stand-ins of a rebuild are `<name>__rebuild_<tag>`; no collection of the port may look like one. */
const REBUILD_MARKER = '__rebuild_';

export class SqliteReadStore implements ReadStore {
  readonly checkpoints: CheckpointStore;
  private readonly statements = new Map<string, Statement>();
  private readonly collections = new Map<string, SqliteCollection<Doc>>();

  private readonly writes: GroupCommit;
  private readonly optimizeTimer: NodeJS.Timeout;
  private readonly dataVersion: Statement;
  private lastDataVersion = 0;
  /** See readStamp: moves on with every commit of another connection, and with every swap. */
  private stamp = 0;
  /** data_version was read in this turn of the event loop. */
  private stampRead = false;

  private constructor(
    private readonly db: Database.Database,
    /** The database file (`:memory:` for a private store): what a rebuild's writer thread opens. */
    private readonly file: string,
  ) {
    this.writes = new GroupCommit(db);
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.checkpoints = new SqliteCheckpointStore((sql) => this.statement(sql), this.writes);
    this.optimizeTimer = setInterval(() => this.optimize(), OPTIMIZE_INTERVAL_MS);
    this.optimizeTimer.unref();
  }

  /** Refreshes the query planner's statistics of the tables that changed enough (cheap otherwise); a busy file waits for the next round. */
  optimize(): void {
    // Not inside a write of this connection (a rebuild's swap awaits in its transaction), and never
    // waiting for another process's lock: the event loop would stall for the busy timeout.
    if (!this.db.open || this.db.inTransaction) return;
    try {
      this.db.pragma('busy_timeout = 0');
      this.db.pragma('optimize');
    } catch {
      // SQLITE_BUSY while another process writes: statistics can wait for the next round.
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  /** Opens (creating if needed) a store in `file`; `:memory:` gives a private, throwaway store. */
  static open(file: string): SqliteReadStore {
    const db = openWal(file);
    try {
      // In WAL mode NORMAL survives process crashes; a power loss may drop the last commits, which
      // a read store can afford because it is rebuilt from the event store from its checkpoints.
      db.pragma('synchronous = NORMAL');
      // PRAGMA optimize (see optimize()) samples at most this many rows of an index: bounded work on large tables.
      db.pragma('analysis_limit = 1000');
      db.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position TEXT NOT NULL) STRICT');
      // Processor leases (see CheckpointStore): expires_at in ms by this host's clock, which every process on a SQLite file shares.
      db.exec('CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, epoch INTEGER NOT NULL, expires_at INTEGER NOT NULL) STRICT');
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteReadStore(db, file);
  }

  collection<T extends Doc>(name: string, options: CollectionOptions = {}): Collection<T> {
    assertCollectionName(name);
    const indexes = (options.indexes ?? []).map(indexFields);

    let collection = this.collections.get(name);
    if (!collection) {
      const table = quoteIdentifier(`coll_${name}`);
      this.db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, revision INTEGER, doc TEXT NOT NULL) STRICT`);
      collection = new SqliteCollection<Doc>(
        this.db,
        name,
        (sql) => this.statement(sql),
        this.writes,
        existingIndexKeys(this.db, name),
        () => this.readStamp(),
        () => this.currentStamp(),
      );
      this.collections.set(name, collection);
    }
    if (options.readMostly) collection.rememberReads();
    // Indexes may be declared later by another caller of the same collection: create what is new.
    collection.ensureIndexes(indexes);
    return collection as unknown as Collection<T>;
  }

  /**
   * Stand-ins are tables `coll_<name>__rebuild_<tag>`, without indexes until the swap (one bulk build
   * each instead of index upkeep on every insert). The swap drops each live table (and its indexes)
   * and renames the stand-in into its place, all in one IMMEDIATE transaction: another connection's
   * statements on `coll_<name>` are prepared again by SQLite on their next run, and find the new table.
   * SQLite cannot rename an index, so the stand-in's carry the generation: `ix:<name>:<key>:g<tag>`
   * (existingIndexKeys reads both spellings).
   */
  async beginRebuild(specs: RebuildSpec[]): Promise<ReadModelRebuild> {
    if (specs.length === 0) throw new Error('a rebuild needs at least one collection');
    const names = specs.map((spec) => spec.name);
    for (const name of names) assertCollectionName(name);
    if (new Set(names).size !== names.length) throw new Error('a rebuild names each collection once');
    const tag = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
    const standIns = new Map<string, { spec: RebuildSpec; staged: string; collection: SqliteCollection<Doc> }>();
    const indexKeysOf = (spec: RebuildSpec) => {
      const keys = new Set([
        ...(spec.indexes ?? []).map((index) => indexFields(index).join('+')),
        ...(this.collections.get(spec.name)?.indexedKeys() ?? []),
        ...existingIndexKeys(this.db, spec.name),
      ]);
      keys.delete('id');
      return keys;
    };
    const made = new Set<string>();
    /** The stand-in's indexes: those declared and those the live collection has (by now). */
    const indexStandIn = (spec: RebuildSpec, staged: string) => {
      for (const key of indexKeysOf(spec)) {
        const index = `ix:${spec.name}:${key}:g${tag}`;
        if (made.has(index)) continue;
        this.db.exec(`CREATE INDEX ${quoteIdentifier(index)} ON ${quoteIdentifier(`coll_${staged}`)} (${key.split('+').map(fieldValue).join(', ')}, id)`);
        made.add(index);
      }
    };
    for (const spec of specs) {
      const staged = `${spec.name}${REBUILD_MARKER}${tag}`;
      this.db.exec(`CREATE TABLE ${quoteIdentifier(`coll_${staged}`)} (id TEXT PRIMARY KEY, revision INTEGER, doc TEXT NOT NULL) STRICT`);
      // Indexed from the start: kept up as documents come (each parsed once for all its indexes)
      // costs less in all than building them at the end, and it is done in the writer thread.
      indexStandIn(spec, staged);
      standIns.set(spec.name, { spec, staged, collection: new SqliteCollection<Doc>(this.db, staged, (sql) => this.statement(sql), this.writes, new Set()) });
    }
    const standIn = (name: string) => {
      const found = standIns.get(name);
      if (!found) throw new Error(`${name} is not part of this rebuild`);
      return found;
    };
    let finished = false;
    const assertActive = () => {
      if (finished) throw new Error('this rebuild is already swapped in or discarded');
    };
    const upsertAll = this.db.transaction((collection: SqliteCollection<Doc>, entries: ReadonlyArray<{ doc: Doc; revision: number }>) => {
      for (const { doc, revision } of entries) collection.upsertNow(doc, revision);
    });
    // Until the swap, writes go through a thread of their own (a file-backed store only).
    const inFile = this.file !== ':memory:' && this.file !== '';
    const tables = Object.fromEntries([...standIns].map(([name, { staged }]) => [name, quoteIdentifier(`coll_${staged}`)]));
    let writer: StandInWriter | null = inFile ? StandInWriter.start(this.file, tables, BUSY_TIMEOUT_MS) : null;
    const stopWriter = async () => {
      const stopping = writer;
      writer = null;
      await stopping?.close();
    };
    return {
      collection: <T extends Doc>(name: string) => standIn(name).collection as unknown as Collection<T>,
      upsertMany: async (name, entries) => {
        assertActive();
        const { collection } = standIn(name);
        if (writer) await writer.upsertMany(name, entries);
        else upsertAll(collection, entries as ReadonlyArray<{ doc: Doc; revision: number }>);
      },
      drain: async () => {
        await writer?.drain();
      },
      ...(inFile
        ? {
            standInPort: () => {
              assertActive();
              return writer!.port();
            },
          }
        : {}),
      swap: async (lastly) => {
        assertActive();
        await stopWriter();
        // Indexes the live collections got meanwhile.
        for (const { spec, staged } of standIns.values()) indexStandIn(spec, staged);
        // By hand rather than db.transaction(): `lastly` is asynchronous. Nothing else of this process
        // may write through this connection meanwhile (it would join the transaction): ops runs alone.
        this.db.exec('BEGIN IMMEDIATE');
        try {
          const checkpoints = lastly ? await lastly() : {};
          for (const { spec, staged } of standIns.values()) {
            this.db.exec(`DROP TABLE IF EXISTS ${quoteIdentifier(`coll_${spec.name}`)}`);
            this.db.exec(`ALTER TABLE ${quoteIdentifier(`coll_${staged}`)} RENAME TO ${quoteIdentifier(`coll_${spec.name}`)}`);
          }
          // Directly, not through the write group: inside this transaction, now.
          const setCheckpoint = this.statement(
            'INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position',
          );
          for (const [name, position] of Object.entries(checkpoints)) setCheckpoint.run(name, position);
          this.db.exec('COMMIT');
        } catch (error) {
          if (this.db.inTransaction) this.db.exec('ROLLBACK');
          throw error;
        } finally {
          // The live tables are others now (or, rolled back, what was read inside is gone): nothing remembered holds.
          this.stamp++;
        }
        finished = true;
      },
      discard: async () => {
        if (finished) return;
        finished = true;
        await stopWriter().catch(() => undefined);
        for (const { staged } of standIns.values()) this.db.exec(`DROP TABLE IF EXISTS ${quoteIdentifier(`coll_${staged}`)}`);
      },
    };
  }

  /**
   * What a read-mostly collection's remembered reads are checked against, besides its own writes:
   * `PRAGMA data_version` changes when another connection (a process, or a rebuild's writer
   * thread) commits to the file, and a swap replaces tables in this connection (what was read
   * inside its transaction is forgotten with it, committed or rolled back). data_version is read
   * once a turn of the event loop (it costs as much as the reads it saves): the reads of one turn
   * see other connections' commits as of its first, as if they had all been made then.
   */
  private readStamp(): number {
    if (this.stampRead) return this.stamp;
    this.stampRead = true;
    setImmediate(() => (this.stampRead = false));
    return this.currentStamp();
  }

  /** readStamp as of now, data_version read again. */
  private currentStamp(): number {
    const version = this.dataVersion.get() as number;
    if (version !== this.lastDataVersion) {
      this.lastDataVersion = version;
      this.stamp++;
    }
    return this.stamp;
  }

  async ping(): Promise<void> {
    this.statement('SELECT 1').get();
  }

  async close(): Promise<void> {
    clearInterval(this.optimizeTimer);
    if (!this.db.open) return;
    // Writes already made are committed, not dropped.
    this.writes.flush();
    this.db.close();
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

function assertCollectionName(name: string): void {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name)) throw new Error(`invalid collection name: ${JSON.stringify(name)}`);
  if (name.includes(REBUILD_MARKER)) throw new Error(`invalid collection name: ${JSON.stringify(name)} looks like a rebuild in progress`);
}
