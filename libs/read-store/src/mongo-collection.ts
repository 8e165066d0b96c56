// One read model's MongoDB collection: documents stored with `_id` and `_rev`, revision-guarded
// upserts, atomic updates and claims, and indexes built in the background (retried at readiness).
import { MongoServerError, type AnyBulkWriteOperation, type Collection as DriverCollection, type Document } from 'mongodb';
import { assertFieldName, isReservedField, REVISION_FIELD, storedField, toMongoFilter } from './mongo-filter';
import type { Collection, Doc, Filter, FindOptions, IndexSpec, Page, Scalar } from './read-store.port';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1_000;
const DUPLICATE_KEY = 11000;
/** Retries of an upsert that lost an insert race (see `upsert`); more means something is badly wrong. */
const UPSERT_ATTEMPTS = 5;

/** Documents as stored: the read model's document plus `_id` and, if projected, `_rev`. */
export type Stored = Document & { _id: string; _rev?: number };
type IndexFailure = { error: unknown; reported: boolean; attempts: number; retryAt: number };

/** A failed index build is tried again at a readiness check, no sooner than this after the last try (doubling, up to a minute). */
const INDEX_RETRY_BASE_MS = 1_000;
const INDEX_RETRY_MAX_MS = 60_000;

/** Reads return the document's own fields only. */
const READ_PROJECTION = { [REVISION_FIELD]: 0 } as const;

export class MongoReadCollection<T extends Doc> implements Collection<T> {
  /** Fields whose index exists or is being created. */
  private readonly indexed = new Set<string>();
  private readonly failures = new Map<string, IndexFailure>();

  constructor(
    private readonly rows: DriverCollection<Stored>,
    private readonly name: string,
    private readonly assertOpen: () => void,
  ) {}

  ensureIndexes(fields: string[]): void {
    for (const field of fields) {
      // `id` is the `_id`, indexed already.
      if (field === 'id' || this.indexed.has(field)) continue;
      void this.createIndex(field);
    }
  }

  /** Builds the failed indexes again whose time has come (see INDEX_RETRY_BASE_MS). */
  async retryFailedIndexes(now: number): Promise<void> {
    const due = [...this.failures].filter(([field, failure]) => failure.retryAt <= now && !this.indexed.has(field)).map(([field]) => field);
    await Promise.all(due.map((field) => this.createIndex(field)));
  }

  private createIndex(field: string): Promise<void> {
    this.indexed.add(field);
    // createIndex is idempotent: an index with the same key (and default name) is left as it is.
    return this.rows.createIndex(indexKey(field)).then(
      () => void this.failures.delete(field),
      (error: unknown) => {
        // Forgotten, so that declaring the index again, or the next readiness check, retries it.
        this.indexed.delete(field);
        const attempts = (this.failures.get(field)?.attempts ?? 0) + 1;
        const wait = Math.min(INDEX_RETRY_MAX_MS, INDEX_RETRY_BASE_MS * 2 ** (attempts - 1));
        // Reported to a caller once per failure, not again at every failed retry.
        this.failures.set(field, { error, reported: this.failures.get(field)?.reported ?? false, attempts, retryAt: Date.now() + wait });
      },
    );
  }

  declaredIndexes(): string[] {
    return [...this.indexed];
  }

  indexFailures(): string[] {
    return [...this.failures].map(([field, failure]) => `${this.name}.${field}: ${messageOf(failure.error)}`);
  }

  async get(id: string): Promise<T | null> {
    this.beforeOperation();
    return toDoc<T>(await this.rows.findOne({ _id: id }, { projection: READ_PROJECTION }));
  }

  async upsert(doc: T, revision: number): Promise<boolean> {
    this.beforeOperation();
    if (!Number.isSafeInteger(revision)) throw new TypeError(`revision must be an integer, got ${String(revision)}`);
    const stored = toStored(doc);
    const replacement = { ...stored, [REVISION_FIELD]: revision };
    // The guard is part of the filter: a stored document matches only if its revision is lower, or
    // it has none (written by `insert`, so older than any projected one). If nothing matches, the
    // upsert inserts, and a document with this id makes that insert fail with a duplicate key.
    const guarded: Document = { _id: stored._id, $or: [{ [REVISION_FIELD]: { $lt: revision } }, { [REVISION_FIELD]: null }] };
    for (let attempt = 1; ; attempt++) {
      try {
        // A replacement, not $set: a newer revision replaces the whole document.
        await this.rows.replaceOne(guarded, replacement, { upsert: true });
        return true;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        // Usually the stored revision is at least `revision` (a replay or a stale event). But the
        // document may also have been inserted between the server's match and its insert (the
        // server retries that race itself only for filters of plain equalities); then the guard
        // must be evaluated again. The read is where the no-op takes effect.
        const current = await this.rows.findOne({ _id: stored._id }, { projection: { [REVISION_FIELD]: 1 } });
        const storedRevision = current?.[REVISION_FIELD];
        if (typeof storedRevision === 'number' && storedRevision >= revision) return false;
        if (attempt >= UPSERT_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Guarded upserts in one unordered bulk write. A duplicate key is a document already stored at
   * this revision or a later one (a fresh stand-in has no concurrent writers to race): nothing to do.
   */
  async upsertMany(entries: ReadonlyArray<{ doc: T; revision: number }>): Promise<void> {
    this.beforeOperation();
    if (entries.length === 0) return;
    const operations = entries.map(({ doc, revision }): AnyBulkWriteOperation<Stored> => {
      if (!Number.isSafeInteger(revision)) throw new TypeError(`revision must be an integer, got ${String(revision)}`);
      const stored = toStored(doc);
      return {
        replaceOne: {
          filter: { _id: stored._id, $or: [{ [REVISION_FIELD]: { $lt: revision } }, { [REVISION_FIELD]: null }] } as Document,
          replacement: { ...stored, [REVISION_FIELD]: revision },
          upsert: true,
        },
      };
    });
    try {
      await this.rows.bulkWrite(operations, { ordered: false });
    } catch (error) {
      const writeErrors = (error as { writeErrors?: Array<{ code?: number }> | { code?: number } }).writeErrors;
      const errors = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : null;
      if (!errors || errors.some((e) => e.code !== DUPLICATE_KEY)) throw error;
    }
  }

  async revisionOf(id: string): Promise<number | null> {
    this.beforeOperation();
    const row = await this.rows.findOne({ _id: id }, { projection: { [REVISION_FIELD]: 1 } });
    const revision = row?.[REVISION_FIELD];
    return typeof revision === 'number' ? revision : null;
  }

  async insert(doc: T): Promise<boolean> {
    this.beforeOperation();
    try {
      await this.rows.insertOne(toStored(doc));
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async update(id: string, patch: Partial<T>, where: Filter = {}): Promise<T | null> {
    this.beforeOperation();
    const changes = toUpdate(patch, id);
    const filter = toMongoFilter({ ...where, id });
    if (!changes) return toDoc<T>(await this.rows.findOne(filter, { projection: READ_PROJECTION }));
    return toDoc<T>(await this.rows.findOneAndUpdate(filter, changes, { returnDocument: 'after', projection: READ_PROJECTION }));
  }

  async claim(where: Filter, patch: Partial<T>, orderBy = 'id'): Promise<T | null> {
    this.beforeOperation();
    assertFieldName(orderBy);
    const changes = toUpdate(patch);
    const filter = toMongoFilter(where);
    // Oldest first; ties on another field go by id, as in SQLite (`ORDER BY field, id`).
    const sort: Document = orderBy === 'id' ? { _id: 1 } : { [orderBy]: 1, _id: 1 };
    if (!changes) return toDoc<T>(await this.rows.findOne(filter, { sort, projection: READ_PROJECTION }));
    return toDoc<T>(await this.rows.findOneAndUpdate(filter, changes, { sort, returnDocument: 'after', projection: READ_PROJECTION }));
  }

  async find(where: Filter, options: FindOptions = {}): Promise<Page<T>> {
    this.beforeOperation();
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer in 1..${MAX_LIMIT}, got ${limit}`);
    const order = options.order ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw new RangeError(`order must be asc or desc, got ${String(order)}`);
    const descending = order === 'desc';
    let filter = toMongoFilter(where);
    if (options.startingAfter !== undefined) {
      if (typeof options.startingAfter !== 'string') throw new TypeError('startingAfter must be an id');
      const cursor = { _id: { [descending ? '$lt' : '$gt']: options.startingAfter } };
      // The filter may have its own condition on `_id` (an `id` filter): both must hold.
      filter = Object.hasOwn(filter, '_id') ? { $and: [filter, cursor] } : { ...filter, ...cursor };
    }
    // One document more than asked tells whether another page exists without a second query.
    const rows = await this.rows.find(filter, { sort: { _id: descending ? -1 : 1 }, limit: limit + 1, projection: READ_PROJECTION }).toArray();
    return {
      items: rows.slice(0, limit).map((row) => toDoc<T>(row) as T),
      hasMore: rows.length > limit,
    };
  }

  async count(where: Filter): Promise<number> {
    this.beforeOperation();
    return this.rows.countDocuments(toMongoFilter(where));
  }

  async distinct(field: string, where: Filter, limit: number): Promise<Scalar[]> {
    assertFieldName(field);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer in 1..${MAX_LIMIT}, got ${limit}`);
    this.beforeOperation();
    const rows = await this.rows
      .aggregate<{ _id: unknown }>([{ $match: toMongoFilter(where) }, { $group: { _id: `$${storedField(field)}` } }, { $limit: limit }])
      .toArray();
    // A missing field groups as null, as SQLite's json_extract gives it; objects and arrays are no scalars.
    return rows.map((row) => row._id ?? null).filter((value): value is Scalar => value === null || typeof value !== 'object');
  }

  async delete(id: string): Promise<boolean> {
    this.beforeOperation();
    // The revision goes with the document: a later upsert of this id starts afresh.
    const result = await this.rows.deleteOne({ _id: id });
    return result.deletedCount > 0;
  }

  /** Refuses operations on a closed store, and reports a failed index build once. */
  private beforeOperation(): void {
    this.assertOpen();
    const unreported = [...this.failures].filter(([, failure]) => !failure.reported);
    if (!unreported.length) return;
    for (const [, failure] of unreported) failure.reported = true;
    throw indexError(
      unreported.map(([field, failure]) => `${this.name}.${field}: ${messageOf(failure.error)}`),
      unreported[0][1].error,
    );
  }
}

/**
 * The `$set` (and `$unset`) of a top-level merge. `undefined` leaves a field as it is, `null`
 * stores null, values are stored as JSON would store them. The id cannot change: it is the `_id`.
 * Null when there is nothing to change.
 */
function toUpdate<T extends Doc>(patch: Partial<T>, id?: string): Document | null {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new TypeError('a patch must be an object');
  const $set: Document = {};
  const $unset: Document = {};
  for (const [field, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    assertFieldName(field);
    if (field === 'id') {
      // Without an id (claim), any id in the patch would be the claimed document's own by chance only.
      if (id === undefined || value !== id) throw new Error(`a patch cannot change the id of ${id ?? 'a claimed document'}`);
      continue;
    }
    const json = JSON.stringify(value);
    // A value JSON cannot hold (a function, a symbol) drops the field, as JSON.stringify does in SQLite.
    if (json === undefined) $unset[field] = '';
    else $set[field] = JSON.parse(json);
  }
  const update: Document = {};
  if (Object.keys($set).length) update.$set = $set;
  if (Object.keys($unset).length) update.$unset = $unset;
  return Object.keys(update).length ? update : null;
}

/** The stored form of a document: `_id` first, then its own fields as JSON would keep them. */
function toStored(doc: Doc): Stored {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new TypeError('a document must be an object');
  if (typeof doc.id !== 'string' || doc.id === '') throw new TypeError('a document needs a non-empty string id');
  const fields = JSON.parse(JSON.stringify(doc)) as Doc;
  for (const field of Object.keys(fields)) {
    if (isReservedField(field)) throw new TypeError(`a document cannot have a field named ${field}: the store uses it`);
  }
  return { _id: doc.id, ...fields };
}

function toDoc<T extends Doc>(row: Document | null): T | null {
  if (!row) return null;
  const { _id: id, [REVISION_FIELD]: _revision, ...fields } = row;
  return (typeof fields.id === 'string' ? fields : { id, ...fields }) as T;
}

/** An index by name: its fields joined by `+`, which no field name has. */
export function indexName(spec: IndexSpec): string {
  const fields = typeof spec === 'string' ? [spec] : [...spec];
  if (fields.length === 0) throw new Error('an index needs at least one field');
  for (const field of fields) assertFieldName(field);
  return fields.join('+');
}

export function indexKey(name: string): Document {
  return { ...Object.fromEntries(name.split('+').map((field) => [storedField(field), 1])), _id: 1 };
}

export function isFieldName(field: string): boolean {
  try {
    assertFieldName(field);
    return true;
  } catch {
    return false;
  }
}

export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

export function indexError(failures: string[], cause?: unknown): Error {
  return new Error(`creating read store indexes failed: ${failures.join('; ')}`, cause === undefined ? undefined : { cause });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
