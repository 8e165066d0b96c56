// One collection of the SQLite read store: a table `coll_<name>` of JSON documents, its expression
// indexes, and reads and writes through the store's statement cache and write group.
import Database from 'better-sqlite3';
import { GroupCommit } from '@campaign-ops/sqlite-wal';
import type { Collection, Doc, FindOptions, Filter, IndexSpec, Page, Scalar } from './read-store.port';
import { assertDocument, assertRevision } from './document-checks';
import { upsertSql } from './upsert-sql';
import { assertFieldName, CompiledFilter, compileFilter, fieldValue } from './sqlite-filter';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1_000;
/** Reads a read-mostly collection holds in memory at most (all let go at once beyond: bounded by whoever asks). */
const REMEMBERED_READS = 1_000;
/** Revisions of its own upserts a collection holds in memory at most (see SqliteCollection.written). */
const REMEMBERED_REVISIONS = 10_000;

export type Statement = Database.Statement<unknown[]>;
export type StatementSource = (sql: string) => Statement;
type DocRow = { id: string; doc: string };
/** Changes whenever the store's tables may have changed behind this connection's back (another connection's commit, a rebuild's swap). */
export type ReadStamp = () => number;

export class SqliteCollection<T extends Doc> implements Collection<T> {
  private readonly table: string;
  private readonly indexed: Set<string>;
  private readonly updateTransaction: (id: string, patch: Partial<T>, where: Filter) => Promise<T | null>;
  private readonly claimTransaction: (filter: CompiledFilter, patch: Partial<T>, orderBy: string) => Promise<T | null>;
  /** Read-mostly (see CollectionOptions.readMostly): the JSON text each read answered, with the stamp and the writes it saw. */
  private remembered: Map<string, { stamp: number; writes: number; docs: string[] }> | null = null;
  /** Writes to this table through this connection: a remembered read must have seen every one. */
  private localWrites = 0;
  /**
   * The revisions upserts through this connection stored, each with the stamp as of its commit:
   * what revisionOf answers while the stamp is the same, no other connection having committed
   * since (a projection asking after the view its command has just written). Bounded: all let go
   * at once beyond REMEMBERED_REVISIONS.
   */
  private readonly written = new Map<string, { revision: number; stamp: number }>();
  /** Upserts made through this collection and not yet committed, by id: revisionOf waits for them. */
  private readonly queued = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Database.Database,
    private readonly name: string,
    private readonly statement: StatementSource,
    private readonly writes: GroupCommit,
    /** The index keys that exist on the table (a staged rebuild starts without any). */
    indexed: Set<string> = new Set(),
    private readonly readStamp: ReadStamp = () => 0,
    /** The stamp now, not as of this turn's first read: asked inside a write's transaction, which no other connection can commit during. */
    private readonly currentStamp: ReadStamp = readStamp,
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
    const claim = (filter: CompiledFilter, patch: Partial<T>, orderBy: string) => {
      const order = orderBy === 'id' ? 'id' : `${fieldValue(orderBy)}, id`;
      const row = this.statement(`SELECT id, doc FROM ${this.table} WHERE ${filter.sql} ORDER BY ${order} LIMIT 1`).get(...filter.params) as DocRow | undefined;
      return row ? this.write(row, patch) : null;
    };
    this.claimTransaction = (filter, patch, orderBy) => this.writes.write(() => claim(filter, patch, orderBy));
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

  /** From now on `get` and `find` are answered from memory while nothing changed the table since (CollectionOptions.readMostly). */
  rememberReads(): void {
    this.remembered ??= new Map();
  }

  async get(id: string): Promise<T | null> {
    const [doc] = this.read(
      () => `get\u0000${id}`,
      () => {
        const row = this.statement(`SELECT doc FROM ${this.table} WHERE id = ?`).get(id) as { doc: string } | undefined;
        return row ? [row.doc] : [];
      },
    );
    return doc === undefined ? null : (JSON.parse(doc) as T);
  }

  /**
   * The documents (JSON text) a query answers: run, or, read-mostly, as it answered last time when
   * this connection wrote nothing to the table since and the stamp is the same. Parsed anew by
   * each caller, so no caller sees another's changes to a document. The key (the query and its
   * parameters) is made only for a read-mostly collection: for the others it would be garbage.
   */
  private read(keyOf: () => string, query: () => string[]): string[] {
    const remembered = this.remembered;
    if (remembered === null) return query();
    const stamp = this.readStamp();
    const key = keyOf();
    const held = remembered.get(key);
    if (held && held.stamp === stamp && held.writes === this.localWrites) return held.docs;
    const docs = query();
    if (remembered.size >= REMEMBERED_READS) remembered.clear();
    remembered.set(key, { stamp, writes: this.localWrites, docs });
    return docs;
  }

  indexedKeys(): string[] {
    return [...this.indexed];
  }

  async upsert(doc: T, revision: number): Promise<boolean> {
    assertRevision(revision);
    const json = serialize(doc);
    // The stamp is read in the write's transaction, whose lock no other connection's commit can
    // come in under: as of the commit, the row holds this revision (a guarded upsert writes only
    // past the stored one). One that changed nothing leaves a revision this connection does not know.
    const writing = this.writes.write(() => (this.upsertJson(doc.id, revision, json) ? this.currentStamp() : null));
    this.queued.set(doc.id, writing);
    let stamp: number | null;
    try {
      stamp = await writing;
    } finally {
      if (this.queued.get(doc.id) === writing) this.queued.delete(doc.id);
    }
    if (stamp === null) {
      this.written.delete(doc.id);
      return false;
    }
    if (this.written.size >= REMEMBERED_REVISIONS) this.written.clear();
    this.written.set(doc.id, { revision, stamp });
    return true;
  }

  /** upsert, synchronously: so that a rebuild can write many in one transaction. */
  upsertNow(doc: T, revision: number): boolean {
    assertRevision(revision);
    // Not through the group: the transaction around it may yet roll back.
    this.written.delete(doc.id);
    return this.upsertJson(doc.id, revision, serialize(doc));
  }

  private upsertJson(id: string, revision: number, json: string): boolean {
    this.localWrites++;
    return this.statement(upsertSql(this.table)).run(id, revision, json).changes > 0;
  }

  async revisionOf(id: string): Promise<number | null> {
    // An upsert of it made through this collection is waited for, whatever its outcome: a
    // projection asking right after the event its command appended then finds the view the command
    // is writing inline (ChargedDispatches.make, CreditLedgers), instead of reading the stream and
    // writing the view itself in the meantime.
    const queued = this.queued.get(id);
    if (queued) await queued.catch(() => undefined);
    // Another connection's commit since (a replica, a rebuild's swap) moves the stamp: then the table is asked.
    const written = this.written.get(id);
    if (written !== undefined && written.stamp === this.readStamp()) return written.revision;
    const row = this.statement(`SELECT revision FROM ${this.table} WHERE id = ?`).get(id) as { revision: number | null } | undefined;
    return row?.revision ?? null;
  }

  async insert(doc: T): Promise<boolean> {
    const json = serialize(doc);
    const result = await this.writes.write(() => {
      this.localWrites++;
      return this.statement(`INSERT INTO ${this.table} (id, revision, doc) VALUES (?, NULL, ?) ON CONFLICT(id) DO NOTHING`).run(doc.id, json);
    });
    this.written.delete(doc.id);
    return result.changes > 0;
  }

  async update(id: string, patch: Partial<T>, where: Filter = {}): Promise<T | null> {
    return this.updateTransaction(id, patch, where);
  }

  async claim(where: Filter, patch: Partial<T>, orderBy = 'id'): Promise<T | null> {
    assertFieldName(orderBy);
    // Nothing matches now, and no write of this store waits to be committed before this claim:
    // answered by a read, without the write lock and a commit (a worker looking for due work finds
    // none as often as not). A document that comes to match meanwhile is the next claim's.
    const filter = compileFilter(where);
    if (!this.writes.queued && !this.statement(`SELECT 1 FROM ${this.table} WHERE ${filter.sql} LIMIT 1`).get(...filter.params)) return null;
    return this.claimTransaction(filter, patch, orderBy);
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
    const sql = `SELECT doc FROM ${this.table} WHERE ${conditions.join(' AND ')} ORDER BY id ${descending ? 'DESC' : 'ASC'} LIMIT ?`;
    params.push(limit + 1);
    const docs = this.read(
      () => `${sql}\u0000${JSON.stringify(params)}`,
      () => (this.statement(sql).all(...params) as { doc: string }[]).map((row) => row.doc),
    );
    return {
      items: docs.slice(0, limit).map((doc) => JSON.parse(doc) as T),
      hasMore: docs.length > limit,
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
    const deleted = await this.writes.write(() => {
      this.localWrites++;
      return this.statement(`DELETE FROM ${this.table} WHERE id = ?`).run(id);
    });
    // After the commit: an upsert of the id made before it resolved first, and remembered a row now gone.
    this.written.delete(id);
    return deleted.changes > 0;
  }

  /** Applies `patch` to a stored row and writes it back; the revision is left as it was. */
  private write(row: DocRow, patch: Partial<T>): T {
    const json = serialize(applyPatch(JSON.parse(row.doc) as T, patch));
    this.localWrites++;
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
  // A copy of own properties (spread defines them, so a stored `__proto__` field stays data);
  // existing fields keep their position, new ones come last.
  const merged: Record<string, unknown> = { ...doc };
  for (const field of Object.keys(patch)) {
    const value = (patch as Record<string, unknown>)[field];
    if (value === undefined) continue;
    assertFieldName(field);
    if (field === 'id' && value !== doc.id) throw new Error(`a patch cannot change the id of ${doc.id}`);
    // Assigning `__proto__` would set the prototype instead of storing the field.
    if (field === '__proto__') Object.defineProperty(merged, field, { value, enumerable: true, writable: true, configurable: true });
    else merged[field] = value;
  }
  return merged as T;
}

function serialize(doc: Doc): string {
  return JSON.stringify(assertDocument(doc));
}

export function indexFields(spec: IndexSpec): string[] {
  const fields = typeof spec === 'string' ? [spec] : [...spec];
  if (fields.length === 0) throw new Error('an index needs at least one field');
  for (const field of fields) assertFieldName(field);
  return fields;
}

/**
 * The index keys the table of `name` has: `ix:<name>:<key>` as ensureIndexes names them, and
 * `ix:<name>:<key>:g<tag>` as a rebuild's swap left them.
 */
export function existingIndexKeys(db: Database.Database, name: string): Set<string> {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?").all(`coll_${name}`) as { name: string }[];
  const prefix = `ix:${name}:`;
  return new Set(rows.filter((row) => row.name.startsWith(prefix)).map((row) => row.name.slice(prefix.length).replace(/:g[a-z0-9]+$/, '')));
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
