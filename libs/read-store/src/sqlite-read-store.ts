import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS, GroupCommit, openWal } from '@campaign-ops/sqlite-wal';
import type {
  CheckpointStore,
  Collection,
  CollectionOptions,
  Doc,
  FindOptions,
  Filter,
  IndexSpec,
  Lease,
  LeaseFence,
  Page,
  ReadModelRebuild,
  ReadStore,
  RebuildSpec,
  Scalar,
  StandInTables,
} from './read-store.port';
import { LeaseLostError } from './read-store.port';
import { assertDocument, assertRevision } from './document-checks';
import { StandInWriter } from './rebuild-writer';
import { upsertSql } from './upsert-sql';

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

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1_000;
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
/** Field names are inlined into SQL (see "Filters" below), so this pattern is what keeps that safe. */
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Statement = Database.Statement<unknown[]>;
type StatementSource = (sql: string) => Statement;
type DocRow = { id: string; doc: string };

export class SqliteReadStore implements ReadStore {
  readonly checkpoints: CheckpointStore;
  private readonly statements = new Map<string, Statement>();
  private readonly collections = new Map<string, SqliteCollection<Doc>>();

  private readonly writes: GroupCommit;
  private readonly optimizeTimer: NodeJS.Timeout;

  private constructor(
    private readonly db: Database.Database,
    /** The database file (`:memory:` for a private store): what a rebuild's writer thread opens. */
    private readonly file: string,
  ) {
    this.writes = new GroupCommit(db);
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
      collection = new SqliteCollection<Doc>(this.db, name, (sql) => this.statement(sql), this.writes, existingIndexKeys(this.db, name));
      this.collections.set(name, collection);
    }
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
    const tables: StandInTables = { file: this.file, tables: Object.fromEntries([...standIns].map(([name, { staged }]) => [name, quoteIdentifier(`coll_${staged}`)])) };
    let writer: StandInWriter | null = inFile ? new StandInWriter(tables, BUSY_TIMEOUT_MS) : null;
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
      ...(inFile ? { standInTables: () => tables } : {}),
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
          const setCheckpoint = this.statement('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position');
          for (const [name, position] of Object.entries(checkpoints)) setCheckpoint.run(name, position);
          this.db.exec('COMMIT');
        } catch (error) {
          if (this.db.inTransaction) this.db.exec('ROLLBACK');
          throw error;
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

class SqliteCheckpointStore implements CheckpointStore {
  constructor(
    private readonly statement: StatementSource,
    private readonly writes: GroupCommit,
  ) {}

  async get(name: string): Promise<string | undefined> {
    const row = this.statement('SELECT position FROM checkpoints WHERE name = ?').get(name) as { position: string } | undefined;
    return row?.position;
  }

  async set(name: string, position: string, fence?: LeaseFence): Promise<void> {
    if (!fence) {
      await this.writes.write(() =>
        this.statement('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position').run(name, position),
      );
      return;
    }
    // One statement: the lease check and the write are one atomic step.
    const { changes } = await this.writes.write(() =>
      this.statement(
        'INSERT INTO checkpoints (name, position) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM leases WHERE name = ? AND holder = ? AND epoch = ?) ' +
          'ON CONFLICT(name) DO UPDATE SET position = excluded.position',
      ).run(name, position, name, fence.holder, fence.epoch),
    );
    if (changes === 0) throw new LeaseLostError(name, fence);
  }

  async acquireLease(name: string, holder: string, ttlMs: number, options: { evenIfHeld?: boolean } = {}): Promise<Lease | null> {
    const row = await this.writes.write(() => {
      const now = Date.now();
      return this.statement(
        'INSERT INTO leases (name, holder, epoch, expires_at) VALUES (?, ?, 1, ?) ' +
          'ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, epoch = leases.epoch + 1, expires_at = excluded.expires_at ' +
          'WHERE ? OR leases.expires_at <= ? OR leases.holder = excluded.holder RETURNING holder, epoch, expires_at',
      ).get(name, holder, now + ttlMs, options.evenIfHeld ? 1 : 0, now) as LeaseRow | undefined;
    });
    return row ? toLease(row) : null;
  }

  async renewLease(name: string, fence: LeaseFence, ttlMs: number): Promise<boolean> {
    const { changes } = await this.writes.write(() =>
      this.statement('UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND epoch = ?').run(Date.now() + ttlMs, name, fence.holder, fence.epoch),
    );
    return changes === 1;
  }

  async releaseLease(name: string, fence: LeaseFence): Promise<void> {
    await this.writes.write(() => this.statement('UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ? AND epoch = ?').run(name, fence.holder, fence.epoch));
  }

  async lease(name: string): Promise<Lease | null> {
    const row = this.statement('SELECT holder, epoch, expires_at FROM leases WHERE name = ?').get(name) as LeaseRow | undefined;
    return row ? toLease(row) : null;
  }

  async reset(name: string, position: string | undefined): Promise<void> {
    await this.writes.write(() => {
      this.statement("INSERT INTO leases (name, holder, epoch, expires_at) VALUES (?, '', 1, 0) ON CONFLICT(name) DO UPDATE SET holder = '', epoch = leases.epoch + 1, expires_at = 0").run(name);
      if (position === undefined) this.statement('DELETE FROM checkpoints WHERE name = ?').run(name);
      else this.statement('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position').run(name, position);
    });
  }
}

type LeaseRow = { holder: string; epoch: number; expires_at: number };
const toLease = (row: LeaseRow): Lease => ({ holder: row.holder, epoch: row.epoch, expiresAt: new Date(row.expires_at) });

class SqliteCollection<T extends Doc> implements Collection<T> {
  private readonly table: string;
  private readonly indexed: Set<string>;
  private readonly updateTransaction: (id: string, patch: Partial<T>, where: Filter) => Promise<T | null>;
  private readonly claimTransaction: (where: Filter, patch: Partial<T>, orderBy: string) => Promise<T | null>;

  constructor(
    private readonly db: Database.Database,
    private readonly name: string,
    private readonly statement: StatementSource,
    private readonly writes: GroupCommit,
    /** The index keys that exist on the table (a staged rebuild starts without any). */
    indexed: Set<string> = new Set(),
  ) {
    this.indexed = indexed;
    this.table = quoteIdentifier(`coll_${name}`);
    // Read-modify-write inside the group's IMMEDIATE transaction, which holds the write lock from
    // the read to the write.
    const update = (id: string, patch: Partial<T>, where: Filter) => {
      const filter = compileFilter({ ...where, id });
      const row = this.statement(`SELECT id, doc FROM ${this.table} WHERE ${filter.sql}`).get(...filter.params) as DocRow | undefined;
      return row ? this.write(row, patch) : null;
    };
    this.updateTransaction = (id, patch, where) => this.writes.write(() => update(id, patch, where));
    const claim = (where: Filter, patch: Partial<T>, orderBy: string) => {
      const filter = compileFilter(where);
      const order = orderBy === 'id' ? 'id' : `${fieldValue(orderBy)}, id`;
      const row = this.statement(`SELECT id, doc FROM ${this.table} WHERE ${filter.sql} ORDER BY ${order} LIMIT 1`).get(...filter.params) as
        | DocRow
        | undefined;
      return row ? this.write(row, patch) : null;
    };
    this.claimTransaction = (where, patch, orderBy) => this.writes.write(() => claim(where, patch, orderBy));
  }

  ensureIndexes(indexes: string[][]): void {
    for (const fields of indexes) {
      // `id` is the primary key already.
      const key = fields.join('+');
      if (key === 'id' || this.indexed.has(key)) continue;
      // The colon keeps index names unambiguous (`a_` + `_b` vs `a` + `__b` would otherwise clash);
      // `+`, which no field name has, joins the fields of a compound index.
      const index = quoteIdentifier(`ix:${this.name}:${key}`);
      this.db.exec(`CREATE INDEX IF NOT EXISTS ${index} ON ${this.table} (${fields.map(fieldValue).join(', ')}, id)`);
      this.indexed.add(key);
    }
  }

  async get(id: string): Promise<T | null> {
    const row = this.statement(`SELECT doc FROM ${this.table} WHERE id = ?`).get(id) as { doc: string } | undefined;
    return row ? (JSON.parse(row.doc) as T) : null;
  }

  indexedKeys(): string[] {
    return [...this.indexed];
  }

  async upsert(doc: T, revision: number): Promise<boolean> {
    assertRevision(revision);
    const json = serialize(doc);
    return this.writes.write(() => this.upsertJson(doc.id, revision, json));
  }

  /** upsert, synchronously: so that a rebuild can write many in one transaction. */
  upsertNow(doc: T, revision: number): boolean {
    assertRevision(revision);
    return this.upsertJson(doc.id, revision, serialize(doc));
  }

  private upsertJson(id: string, revision: number, json: string): boolean {
    return this.statement(upsertSql(this.table)).run(id, revision, json).changes > 0;
  }

  async revisionOf(id: string): Promise<number | null> {
    const row = this.statement(`SELECT revision FROM ${this.table} WHERE id = ?`).get(id) as { revision: number | null } | undefined;
    return row?.revision ?? null;
  }

  async insert(doc: T): Promise<boolean> {
    const json = serialize(doc);
    const result = await this.writes.write(() => this.statement(`INSERT INTO ${this.table} (id, revision, doc) VALUES (?, NULL, ?) ON CONFLICT(id) DO NOTHING`).run(doc.id, json));
    return result.changes > 0;
  }

  async update(id: string, patch: Partial<T>, where: Filter = {}): Promise<T | null> {
    return this.updateTransaction(id, patch, where);
  }

  async claim(where: Filter, patch: Partial<T>, orderBy = 'id'): Promise<T | null> {
    assertFieldName(orderBy);
    return this.claimTransaction(where, patch, orderBy);
  }

  async find(where: Filter, options: FindOptions = {}): Promise<Page<T>> {
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer in 1..${MAX_LIMIT}, got ${limit}`);
    const order = options.order ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw new RangeError(`order must be asc or desc, got ${String(order)}`);
    const descending = order === 'desc';
    const filter = compileFilter(where);
    const conditions = [filter.sql];
    const params = [...filter.params];
    if (options.startingAfter !== undefined) {
      conditions.push(descending ? 'id < ?' : 'id > ?');
      params.push(options.startingAfter);
    }
    // One row more than asked tells whether another page exists without a second query.
    const rows = this.statement(
      `SELECT doc FROM ${this.table} WHERE ${conditions.join(' AND ')} ORDER BY id ${descending ? 'DESC' : 'ASC'} LIMIT ?`,
    ).all(...params, limit + 1) as { doc: string }[];
    return {
      items: rows.slice(0, limit).map((row) => JSON.parse(row.doc) as T),
      hasMore: rows.length > limit,
    };
  }

  async count(where: Filter): Promise<number> {
    const filter = compileFilter(where);
    const row = this.statement(`SELECT count(*) AS n FROM ${this.table} WHERE ${filter.sql}`).get(...filter.params) as { n: number };
    return row.n;
  }

  async distinct(field: string, where: Filter, limit: number): Promise<Scalar[]> {
    assertFieldName(field);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer in 1..${MAX_LIMIT}, got ${limit}`);
    const filter = compileFilter(where);
    // json_extract gives JSON true/false as 1/0, so booleans come back through their JSON text.
    const rows = this.statement(
      `SELECT DISTINCT json_type(doc, '$.${field}') AS type, json_extract(doc, '$.${field}') AS value FROM ${this.table} WHERE ${filter.sql} LIMIT ?`,
    ).all(...filter.params, limit) as { type: string | null; value: unknown }[];
    const values = rows.flatMap((row): Scalar[] => {
      if (row.type === 'true' || row.type === 'false') return [row.type === 'true'];
      if (row.type === null || row.type === 'null') return [null];
      return row.type === 'object' || row.type === 'array' ? [] : [row.value as Scalar];
    });
    return [...new Set(values)];
  }

  async delete(id: string): Promise<boolean> {
    return (await this.writes.write(() => this.statement(`DELETE FROM ${this.table} WHERE id = ?`).run(id))).changes > 0;
  }

  /** Applies `patch` to a stored row and writes it back; the revision is left as it was. */
  private write(row: DocRow, patch: Partial<T>): T {
    const json = serialize(applyPatch(JSON.parse(row.doc) as T, patch));
    this.statement(`UPDATE ${this.table} SET doc = ? WHERE id = ?`).run(json, row.id);
    // Parsed back from the stored text, so the caller sees exactly what a later `get` returns.
    return JSON.parse(json) as T;
  }
}

/**
 * Top-level merge. `undefined` leaves a field as it is (so an optional property can be passed
 * through unconditionally), `null` stores null. The id cannot change: it is the row's key.
 */
function applyPatch<T extends Doc>(doc: T, patch: Partial<T>): T {
  const changes = Object.entries(patch).filter(([, value]) => value !== undefined);
  for (const [field, value] of changes) {
    assertFieldName(field);
    if (field === 'id' && value !== doc.id) throw new Error(`a patch cannot change the id of ${doc.id}`);
  }
  // fromEntries defines own properties, so even a `__proto__` field is stored as data rather
  // than setting the prototype; later entries win and existing fields keep their position.
  return Object.fromEntries([...Object.entries(doc), ...changes]) as T;
}

function serialize(doc: Doc): string {
  return JSON.stringify(assertDocument(doc));
}

// ---------------------------------------------------------------------------------------------
// Filters
//
// Values are always bound parameters. Field names are inlined as JSON path literals instead,
// because SQLite uses an expression index only when the query contains the very same expression
// (`json_extract(doc, '$.status')`), never a `json_extract(doc, ?)`; FIELD_NAME makes that safe.
//
// json_extract returns SQL values: JSON strings as TEXT, numbers as INTEGER/REAL, true/false as
// 1/0, and null or a missing field as NULL. So comparisons alone would let `true` match `1` and,
// since SQLite orders every number below every text, `{ $lt: 'b' }` match all numbers. Each
// comparison is therefore paired with a `json_type` guard on the kind of the filter value: like
// MongoDB, a filter only matches values of its own type (numbers of any kind compare together).
// ---------------------------------------------------------------------------------------------

type CompiledFilter = { sql: string; params: unknown[] };
type Comparison = '=' | '<' | '<=' | '>' | '>=';
type Kind = 'string' | 'number' | 'boolean';

// A Map, not an object literal: `'constructor' in {...}` would be true.
const RANGE_OPERATORS = new Map<string, Comparison>([
  ['$lt', '<'],
  ['$lte', '<='],
  ['$gt', '>'],
  ['$gte', '>='],
]);
const TYPE_GUARDS: Record<Kind, string> = {
  string: "= 'text'",
  number: "IN ('integer', 'real')",
  boolean: "IN ('true', 'false')",
};
const NEVER = '0';

function compileFilter(where: Filter): CompiledFilter {
  const conditions: string[] = [];
  const params: unknown[] = [];
  for (const [field, condition] of Object.entries(where)) {
    // An undefined value is no condition, as with `patch`: optional filters pass through as they are.
    if (condition === undefined) continue;
    assertFieldName(field);
    if (isScalar(condition)) {
      conditions.push(compare(field, '=', condition, params));
      continue;
    }
    if (typeof condition !== 'object' || Array.isArray(condition)) throw new TypeError(`invalid filter on ${field}`);
    for (const [operator, operand] of Object.entries(condition)) {
      if (operand === undefined) continue;
      if (operator === '$in') {
        if (!Array.isArray(operand)) throw new TypeError(`$in on ${field} needs an array`);
        conditions.push(compileIn(field, operand, params));
      } else if (RANGE_OPERATORS.has(operator)) {
        if (!isScalar(operand)) throw new TypeError(`${operator} on ${field} needs a scalar`);
        conditions.push(compare(field, RANGE_OPERATORS.get(operator)!, operand, params));
      } else {
        throw new TypeError(`unsupported filter operator ${operator} on ${field}`);
      }
    }
  }
  return { sql: conditions.length ? conditions.join(' AND ') : '1', params };
}

function compare(field: string, comparison: Comparison, value: Scalar, params: unknown[]): string {
  if (value === null) {
    // null equals null or a missing field, and nothing is ordered strictly before or after it.
    return comparison === '=' || comparison === '<=' || comparison === '>=' ? `${fieldValue(field)} IS NULL` : NEVER;
  }
  const kind = kindOf(value);
  if (field === 'id') {
    // The id column is always text; no guard needed, and other kinds never match it.
    if (kind !== 'string') return NEVER;
    params.push(value);
    return `id ${comparison} ?`;
  }
  params.push(toSql(value));
  return `(${fieldValue(field)} ${comparison} ? AND ${fieldType(field)} ${TYPE_GUARDS[kind]})`;
}

/** One `IN (json_each(?))` per kind present, so the SQL has a fixed shape whatever the list length. */
function compileIn(field: string, values: unknown[], params: unknown[]): string {
  const byKind = new Map<Kind, unknown[]>();
  let matchesNull = false;
  for (const value of values) {
    if (!isScalar(value)) throw new TypeError(`$in on ${field} accepts scalars only`);
    if (value === null) {
      matchesNull = true;
      continue;
    }
    const kind = kindOf(value);
    byKind.set(kind, [...(byKind.get(kind) ?? []), toSql(value)]);
  }
  const alternatives: string[] = [];
  if (matchesNull) alternatives.push(`${fieldValue(field)} IS NULL`);
  for (const [kind, list] of byKind) {
    if (field === 'id' && kind !== 'string') continue;
    params.push(JSON.stringify(list));
    const membership = `${fieldValue(field)} IN (SELECT value FROM json_each(?))`;
    alternatives.push(field === 'id' ? membership : `(${membership} AND ${fieldType(field)} ${TYPE_GUARDS[kind]})`);
  }
  return alternatives.length ? `(${alternatives.join(' OR ')})` : NEVER;
}

function fieldValue(field: string): string {
  return field === 'id' ? 'id' : `json_extract(doc, '$.${field}')`;
}

function fieldType(field: string): string {
  return `json_type(doc, '$.${field}')`;
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function kindOf(value: string | number | boolean): Kind {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`cannot filter on ${value}: JSON has no such number`);
  return typeof value as Kind;
}

/** Booleans as json_extract returns them; the type guard tells them apart from the numbers 1 and 0. */
function toSql(value: string | number | boolean): string | number {
  return typeof value === 'boolean' ? Number(value) : value;
}

function indexFields(spec: IndexSpec): string[] {
  const fields = typeof spec === 'string' ? [spec] : [...spec];
  if (fields.length === 0) throw new Error('an index needs at least one field');
  for (const field of fields) assertFieldName(field);
  return fields;
}

function assertFieldName(field: string): void {
  if (!FIELD_NAME.test(field)) throw new Error(`invalid field name: ${JSON.stringify(field)}`);
}

function assertCollectionName(name: string): void {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name)) throw new Error(`invalid collection name: ${JSON.stringify(name)}`);
  if (name.includes(REBUILD_MARKER)) throw new Error(`invalid collection name: ${JSON.stringify(name)} looks like a rebuild in progress`);
}

/**
 * The index keys the table of `name` has: `ix:<name>:<key>` as ensureIndexes names them, and
 * `ix:<name>:<key>:g<tag>` as a rebuild's swap left them.
 */
function existingIndexKeys(db: Database.Database, name: string): Set<string> {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?").all(`coll_${name}`) as { name: string }[];
  const prefix = `ix:${name}:`;
  return new Set(rows.filter((row) => row.name.startsWith(prefix)).map((row) => row.name.slice(prefix.length).replace(/:g[a-z0-9]+$/, '')));
}

function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
