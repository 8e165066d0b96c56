import { randomBytes } from 'node:crypto';
import { MongoClient, MongoServerError, type AnyBulkWriteOperation, type Collection as DriverCollection, type Db, type Document } from 'mongodb';
import { assertFieldName, isReservedField, REVISION_FIELD, storedField, toMongoFilter } from './mongo-filter';
import type {
  CheckpointStore,
  Collection,
  CollectionOptions,
  Doc,
  Filter,
  FindOptions,
  IndexSpec,
  Lease,
  LeaseFence,
  Page,
  ReadModelRebuild,
  ReadStore,
  RebuildSpec,
  Scalar,
} from './read-store.port';
import { LeaseLostError } from './read-store.port';

/**
 * MongoDB adapter of the read store, for the production deployment. The SQLite adapter's
 * semantics are the reference; `readStoreContract` checks both.
 *
 * Layout: one MongoDB collection per read model, named as the port names it, and a `checkpoints`
 * collection beside them (`{ _id: name, position }`). A document is stored with `_id` = its id and
 * its own fields at top level (its `id` included), so filters and indexes work on them natively;
 * the revision of a projected document is kept in the reserved `_rev` field (absent for documents
 * written by `insert`). Neither `_id` nor `_rev` is ever returned, and documents may not use them.
 *
 * Documents and patch values are stored as JSON would store them (what SQLite does): they go
 * through a JSON round trip first, so a Date comes back as its ISO string, undefined fields
 * disappear and so on, whichever store is behind the port.
 *
 * Every write is one atomic server operation: the revision-guarded upsert is a `replaceOne` with
 * the guard in its filter (run again only when it lost the insert race of a concurrent first
 * write of the same id, see `upsert`), `update` and `claim` are `findOneAndUpdate`s whose filter includes the
 * condition (the server re-checks it if a concurrent write got there first), so no two callers
 * can both win the same compare-and-set or claim the same document.
 *
 * Indexes: every declared field gets `{ field: 1, _id: 1 }` (a compound one `{ a: 1, b: 1, _id: 1 }`), serving an equality filter on the
 * field with the id order in both directions (lists, `startingAfter`, claims by id) and claims
 * ordered by that field (`sort { field: 1, _id: 1 }`). They are created in the background, since
 * `collection()` is synchronous; a failure is remembered, thrown once by the next operation on that
 * collection and by every `ping` until a later `collection(name, { indexes })` creates it.
 */

const DEFAULT_DATABASE = 'campaign_ops';
const CHECKPOINTS = 'checkpoints';
const REBUILD_MARKER = '__rebuild_';
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1_000;
const DUPLICATE_KEY = 11000;
const NAMESPACE_NOT_FOUND = 26;
/** Retries of an upsert that lost an insert race (see `upsert`); more means something is badly wrong. */
const UPSERT_ATTEMPTS = 5;

const COLLECTION_NAME = /^[a-z_][a-z0-9_]*$/;

/** Documents as stored: the read model's document plus `_id` and, if projected, `_rev`. */
type Stored = Document & { _id: string; _rev?: number };
/** A processor's checkpoint and its lease, in one document: so a fenced write is one atomic single-document update. */
type CheckpointRow = { _id: string; position?: string; lease?: { holder: string; epoch: number; expiresAt: Date } };
type IndexFailure = { error: unknown; reported: boolean; attempts: number; retryAt: number };

/** A failed index build is tried again at a readiness check, no sooner than this after the last try (doubling, up to a minute). */
const INDEX_RETRY_BASE_MS = 1_000;
const INDEX_RETRY_MAX_MS = 60_000;

/** Reads return the document's own fields only. */
const READ_PROJECTION = { [REVISION_FIELD]: 0 } as const;

export interface MongoReadStoreOptions {
  /**
   * The database holding the read models. Default: with `connect`, the database in the URL's path,
   * else `campaign_ops`; with `fromClient`, `campaign_ops`.
   */
  database?: string;
  /** A user of the `admin` database (SCRAM), kept out of the URL so the URL can be shown. */
  credentials?: { user: string; password: string };
}

export class MongoReadStore implements ReadStore {
  readonly checkpoints: CheckpointStore;
  private readonly collections = new Map<string, MongoReadCollection<Doc>>();
  private closed = false;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly ownsClient: boolean,
  ) {
    this.checkpoints = new MongoCheckpointStore(db.collection<CheckpointRow>(CHECKPOINTS), () => this.assertOpen());
  }

  /** Connects to `url` (any MongoDB connection string; client options go in its query string). */
  static async connect(url: string, options: MongoReadStoreOptions = {}): Promise<MongoReadStore> {
    const client = new MongoClient(
      url,
      options.credentials ? { auth: { username: options.credentials.user, password: options.credentials.password }, authSource: 'admin' } : {},
    );
    try {
      await client.connect();
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    return new MongoReadStore(client, client.db(options.database ?? databaseNameFromUrl(url) ?? DEFAULT_DATABASE), true);
  }

  /**
   * A store on a client that the caller owns (and closes: `close()` leaves it open), for sharing
   * one connection pool. The client connects on first use.
   */
  static fromClient(client: MongoClient, options: MongoReadStoreOptions = {}): MongoReadStore {
    return new MongoReadStore(client, client.db(options.database ?? DEFAULT_DATABASE), false);
  }

  get databaseName(): string {
    return this.db.databaseName;
  }

  collection<T extends Doc>(name: string, options: CollectionOptions = {}): Collection<T> {
    assertCollectionName(name);
    const fields = (options.indexes ?? []).map(indexName);

    let collection = this.collections.get(name);
    if (!collection) {
      collection = new MongoReadCollection<Doc>(this.db.collection<Stored>(name), name, () => this.assertOpen());
      this.collections.set(name, collection);
    }
    // Indexes may be declared later by another caller of the same collection: create what is new.
    collection.ensureIndexes(fields);
    return collection as unknown as Collection<T>;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    await this.db.command({ ping: 1 });
    // The driver does not retry a failed createIndexes, and collections are declared once, at
    // start: without this a build that failed once (a primary stepping down, a timeout) would keep
    // the app not ready for good. Readiness checks come every few seconds: each may try again.
    await Promise.all([...this.collections.values()].map((collection) => collection.retryFailedIndexes(Date.now())));
    const failures = [...this.collections.values()].flatMap((collection) => collection.indexFailures());
    if (failures.length) throw indexError(failures);
  }

  /**
   * Rebuilds the read model `name` from scratch and swaps it in: `fill` writes the new contents
   * through the ordinary Collection API into a fresh `<name>__rebuild_<time>_<random>` collection,
   * which then gets the indexes of `name` (those declared through this store and those the live
   * collection has) and is renamed over `name` in one atomic step (`renameCollection` with
   * `dropTarget`). Readers see the old contents until the swap and the new ones after it; queries
   * running on the old collection at that moment fail and must be retried.
   *
   * If `fill`, an index build or the rename fails, the fresh collection is dropped and `name` is left
   * as it was. Writes made to `name` while `fill` runs are lost at the swap: stop the projection
   * that writes `name` (or let `fill` catch up to the projection's checkpoint) before the swap.
   */
  async rebuildInto<T extends Doc = Doc>(name: string, fill: (target: Collection<T>) => Promise<void>): Promise<void> {
    const rebuild = await this.beginRebuild([{ name }]);
    try {
      await fill(rebuild.collection<T>(name));
      await rebuild.swap();
    } finally {
      await rebuild.discard();
    }
  }

  /**
   * Stand-ins are collections `<name>__rebuild_<time>_<random>`, created up front (so that an empty
   * rebuild swaps in an empty collection); the swap builds their indexes (once, after the fill),
   * runs `lastly`, renames each over its live collection and sets the checkpoints. A stand-in not
   * swapped in is dropped by discard().
   */
  async beginRebuild(specs: RebuildSpec[]): Promise<ReadModelRebuild> {
    this.assertOpen();
    if (specs.length === 0) throw new Error('a rebuild needs at least one collection');
    const names = specs.map((spec) => spec.name);
    for (const name of names) assertCollectionName(name);
    if (new Set(names).size !== names.length) throw new Error('a rebuild names each collection once');
    const standIns = new Map<string, { spec: RebuildSpec; staged: string; collection: MongoReadCollection<Doc>; swapped: boolean }>();
    for (const spec of specs) {
      const staged = `${spec.name}${REBUILD_MARKER}${Date.now()}_${randomBytes(4).toString('hex')}`;
      await this.db.createCollection(staged);
      standIns.set(spec.name, { spec, staged, collection: new MongoReadCollection<Doc>(this.db.collection<Stored>(staged), staged, () => this.assertOpen()), swapped: false });
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
    return {
      collection: <T extends Doc>(name: string) => standIn(name).collection as unknown as Collection<T>,
      // Bulk writes are awaited as they are made: nothing is left under way.
      drain: async () => undefined,
      upsertMany: async (name, entries) => {
        assertActive();
        await standIn(name).collection.upsertMany(entries as ReadonlyArray<{ doc: Doc; revision: number }>);
      },
      swap: async (lastly) => {
        assertActive();
        for (const { spec, staged } of standIns.values()) {
          const fields = new Set([
            ...(spec.indexes ?? []).map(indexName),
            ...(this.collections.get(spec.name)?.declaredIndexes() ?? []),
            ...(await this.indexedFieldsOf(spec.name)),
          ]);
          fields.delete('id');
          // Awaited, so that the swapped-in collection is never without them.
          if (fields.size) await this.db.collection(staged).createIndexes([...fields].map((field) => ({ key: indexKey(field) })));
        }
        const checkpoints = lastly ? await lastly() : {};
        for (const entry of standIns.values()) {
          await this.db.renameCollection(entry.staged, entry.spec.name, { dropTarget: true });
          entry.swapped = true;
        }
        for (const [name, position] of Object.entries(checkpoints)) await this.checkpoints.set(name, position);
        finished = true;
      },
      discard: async () => {
        finished = true;
        for (const entry of standIns.values()) {
          if (entry.swapped) continue;
          await this.db
            .collection(entry.staged)
            .drop()
            .catch(() => undefined);
        }
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Index builds still running on the server go on; their client-side promises settle (and
    // are handled) when the client closes.
    if (this.ownsClient) await this.client.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the read store is closed');
  }

  /** The live collection's `{ field: 1, ..., _id: 1 }` indexes (as indexName names them), so that a rebuild keeps them. */
  private async indexedFieldsOf(name: string): Promise<string[]> {
    let indexes: Document[];
    try {
      indexes = await this.db.collection(name).listIndexes().toArray();
    } catch (error) {
      if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return [];
      throw error;
    }
    return indexes.flatMap((index) => {
      const key = Object.entries((index.key ?? {}) as Document);
      const [last] = key.slice(-1);
      if (key.length < 2 || last[0] !== '_id' || key.some(([, order]) => order !== 1)) return [];
      const fields = key.slice(0, -1).map(([field]) => field);
      return fields.every(isFieldName) ? [fields.join('+')] : [];
    });
  }
}

class MongoCheckpointStore implements CheckpointStore {
  constructor(
    private readonly rows: DriverCollection<CheckpointRow>,
    private readonly assertOpen: () => void,
  ) {}

  async get(name: string): Promise<string | undefined> {
    this.assertOpen();
    const row = await this.rows.findOne({ _id: name });
    return row?.position ?? undefined;
  }

  async set(name: string, position: string, fence?: LeaseFence): Promise<void> {
    this.assertOpen();
    if (fence) {
      // The lease is in the same document: the check and the write are one atomic update.
      const { matchedCount } = await this.rows.updateOne(heldBy(name, fence), { $set: { position } });
      if (matchedCount === 0) throw new LeaseLostError(name, fence);
      return;
    }
    // An upsert on `_id` equality alone: the server itself retries the insert race of two
    // concurrent first writes (its duplicate-key retry for exact `_id` matches).
    await this.rows.updateOne({ _id: name }, { $set: { position } }, { upsert: true });
  }

  /** Expiry is by the server's clock ($$NOW), so the replicas' clocks need not agree. */
  async acquireLease(name: string, holder: string, ttlMs: number, options: { evenIfHeld?: boolean } = {}): Promise<Lease | null> {
    this.assertOpen();
    const takeable = options.evenIfHeld
      ? { _id: name }
      : { _id: name, $expr: { $or: [{ $lte: [{ $ifNull: ['$lease.expiresAt', new Date(0)] }, '$$NOW'] }, { $eq: ['$lease.holder', { $literal: holder }] }] } };
    const take = [{ $set: { lease: { holder: { $literal: holder }, epoch: { $add: [{ $ifNull: ['$lease.epoch', 0] }, 1] }, expiresAt: { $add: ['$$NOW', ttlMs] } } } }];
    for (let attempt = 0; ; attempt++) {
      const row = await this.rows.findOneAndUpdate(takeable, take, { returnDocument: 'after' });
      if (row?.lease) return { holder: row.lease.holder, epoch: row.lease.epoch, expiresAt: row.lease.expiresAt };
      if (attempt > 0 || (await this.rows.countDocuments({ _id: name }, { limit: 1 })) > 0) return null;
      // No document yet: create it (a concurrent taker may win that race: fine), then take it.
      await this.rows.insertOne({ _id: name }).catch((error: unknown) => {
        if (!isDuplicateKey(error)) throw error;
      });
    }
  }

  async renewLease(name: string, fence: LeaseFence, ttlMs: number): Promise<boolean> {
    this.assertOpen();
    const { matchedCount } = await this.rows.updateOne(heldBy(name, fence), [{ $set: { 'lease.expiresAt': { $add: ['$$NOW', ttlMs] } } }]);
    return matchedCount === 1;
  }

  async releaseLease(name: string, fence: LeaseFence): Promise<void> {
    this.assertOpen();
    await this.rows.updateOne(heldBy(name, fence), { $set: { 'lease.expiresAt': new Date(0) } });
  }

  async lease(name: string): Promise<Lease | null> {
    this.assertOpen();
    const lease = (await this.rows.findOne({ _id: name }))?.lease;
    return lease ? { holder: lease.holder, epoch: lease.epoch, expiresAt: lease.expiresAt } : null;
  }

  async reset(name: string, position: string | undefined): Promise<void> {
    this.assertOpen();
    const revoke = { 'lease.holder': '', 'lease.expiresAt': new Date(0) };
    await this.rows.updateOne(
      { _id: name },
      position === undefined ? { $set: revoke, $inc: { 'lease.epoch': 1 }, $unset: { position: '' } } : { $set: { ...revoke, position }, $inc: { 'lease.epoch': 1 } },
      { upsert: true },
    );
  }
}

const heldBy = (name: string, fence: LeaseFence) => ({ _id: name, 'lease.holder': fence.holder, 'lease.epoch': fence.epoch });

class MongoReadCollection<T extends Doc> implements Collection<T> {
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
    const rows = await this.rows
      .find(filter, { sort: { _id: descending ? -1 : 1 }, limit: limit + 1, projection: READ_PROJECTION })
      .toArray();
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
    throw indexError(unreported.map(([field, failure]) => `${this.name}.${field}: ${messageOf(failure.error)}`), unreported[0][1].error);
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
function indexName(spec: IndexSpec): string {
  const fields = typeof spec === 'string' ? [spec] : [...spec];
  if (fields.length === 0) throw new Error('an index needs at least one field');
  for (const field of fields) assertFieldName(field);
  return fields.join('+');
}

function indexKey(name: string): Document {
  return { ...Object.fromEntries(name.split('+').map((field) => [storedField(field), 1])), _id: 1 };
}

function isFieldName(field: string): boolean {
  try {
    assertFieldName(field);
    return true;
  } catch {
    return false;
  }
}

function assertCollectionName(name: string): void {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name)) throw new Error(`invalid collection name: ${JSON.stringify(name)}`);
  if (name === CHECKPOINTS) throw new Error(`invalid collection name: ${JSON.stringify(name)} holds the checkpoints`);
  if (name.includes(REBUILD_MARKER)) throw new Error(`invalid collection name: ${JSON.stringify(name)} looks like a rebuild in progress`);
}

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

function indexError(failures: string[], cause?: unknown): Error {
  return new Error(`creating read store indexes failed: ${failures.join('; ')}`, cause === undefined ? undefined : { cause });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The database named by a connection string's path (`mongodb://host/db?...`), if any. The driver
 * falls back to `test` without telling whether the URL named it, hence this parse.
 */
export function databaseNameFromUrl(url: string): string | undefined {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?#]*\/([^?#]*)/i.exec(url);
  const name = match ? decodeURIComponent(match[1]) : '';
  return name === '' ? undefined : name;
}
