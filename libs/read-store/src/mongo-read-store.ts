// The MongoDB read store itself: connecting, its collections, readiness, and rebuilds into
// stand-ins with the swap. Collections are in mongo-collection.ts, checkpoints and leases in
// mongo-checkpoints.ts, filters in mongo-filter.ts.
import { randomBytes } from 'node:crypto';
import { MongoClient, MongoServerError, type Db, type Document } from 'mongodb';
import type { CheckpointStore, Collection, CollectionOptions, Doc, ReadModelRebuild, ReadStore, RebuildSpec } from './read-store.port';
import { CheckpointRow, MongoCheckpointStore } from './mongo-checkpoints';
import { indexError, indexKey, indexName, isFieldName, MongoReadCollection, Stored } from './mongo-collection';

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
const NAMESPACE_NOT_FOUND = 26;

const COLLECTION_NAME = /^[a-z_][a-z0-9_]*$/;

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
      standIns.set(spec.name, {
        spec,
        staged,
        collection: new MongoReadCollection<Doc>(this.db.collection<Stored>(staged), staged, () => this.assertOpen()),
        swapped: false,
      });
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

function assertCollectionName(name: string): void {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name)) throw new Error(`invalid collection name: ${JSON.stringify(name)}`);
  if (name === CHECKPOINTS) throw new Error(`invalid collection name: ${JSON.stringify(name)} holds the checkpoints`);
  if (name.includes(REBUILD_MARKER)) throw new Error(`invalid collection name: ${JSON.stringify(name)} looks like a rebuild in progress`);
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
