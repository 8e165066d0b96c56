import type { MessagePort } from 'node:worker_threads';

/**
 * The read store port: read models (views) projected from events, and operational documents
 * such as webhook deliveries. Adapters: SQLite (embedded) and MongoDB (production).
 *
 * A document is a JSON object with a string `id`. Ids are prefixed ULIDs, so ordering by id is
 * ordering by creation time; lists are newest first, paged with `startingAfter` (an id).
 */
export const READ_STORE = Symbol('READ_STORE');

export type Scalar = string | number | boolean | null;
export type Doc = { id: string } & Record<string, unknown>;

/** Equality on top-level fields; `{ field: { $lte: v } }` / `$gte` / `$lt` / `$gt` / `$in` for ranges and sets. */
export type Filter = Record<string, Scalar | { $lte?: Scalar; $gte?: Scalar; $lt?: Scalar; $gt?: Scalar; $in?: Scalar[] }>;

export interface FindOptions {
  /** 1..1000; default 20. */
  limit?: number;
  /** Return documents that come after this id in the sort order (exclusive cursor). */
  startingAfter?: string;
  /** By id; default `desc` (newest first). */
  order?: 'asc' | 'desc';
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

/**
 * A top-level field that filters use, or fields indexed together: equality on all but the last
 * and a range or the claim order on the last, e.g. `['endpoint_id', 'next_attempt_at']`.
 */
export type IndexSpec = string | readonly string[];

export interface CollectionOptions {
  /** What filters use; adapters index them (each with `id` last, for the id order and cursors). */
  indexes?: IndexSpec[];
  /**
   * Small, read on every request and written rarely (API keys, webhook endpoints, connections): an
   * adapter may answer `get` and `find` from memory for as long as it can tell that nothing has
   * changed the collection since it read it. Reads stay exact: what a write committed is seen by
   * the next read, whichever process wrote it. Once asked for, it holds for the collection.
   */
  readMostly?: boolean;
}

export interface Collection<T extends Doc> {
  get(id: string): Promise<T | null>;
  /**
   * Revision-guarded upsert: stores `doc` only if the stored revision is lower than `revision`
   * (or nothing is stored). Returns whether it stored. Replays and stale events change nothing.
   */
  upsert(doc: T, revision: number): Promise<boolean>;
  /** The stored revision of a document, or null. */
  revisionOf(id: string): Promise<number | null>;
  /** Inserts if no document has this id; returns whether it inserted. */
  insert(doc: T): Promise<boolean>;
  /**
   * Compare-and-set: applies `patch` (top-level fields) to the document with this id if it also
   * matches `where`; returns the updated document or null.
   */
  update(id: string, patch: Partial<T>, where?: Filter): Promise<T | null>;
  /**
   * Atomically picks one document matching `where` (oldest by `orderBy`, default id), applies
   * `patch` and returns it, so that concurrent workers never claim the same one.
   */
  claim(where: Filter, patch: Partial<T>, orderBy?: string): Promise<T | null>;
  find(where: Filter, options?: FindOptions): Promise<Page<T>>;
  count(where: Filter): Promise<number>;
  /** The distinct values of `field` among documents matching `where`, at most `limit` (1..1000) of them, in no given order. */
  distinct(field: string, where: Filter, limit: number): Promise<Scalar[]>;
  delete(id: string): Promise<boolean>;
}

/**
 * Checkpoints of the processors that follow the event store, and the lease that lets one instance
 * of each run across replicas. A lease lives beside its checkpoint (same store, same name), so
 * that a checkpoint write can be fenced: made only while the writer's lease is still the current
 * one, in the same atomic step.
 */
export interface CheckpointStore {
  get(name: string): Promise<string | undefined>;
  /**
   * Stores the position. With `fence`, only while the lease of `name` is still at that holder and
   * epoch (expired or not: nobody else took it then); otherwise changes nothing and throws
   * LeaseLostError. Without, unconditionally (rebuilds, tests).
   */
  set(name: string, position: string, fence?: LeaseFence): Promise<void>;
  /**
   * Takes the lease of `name` for `ttlMs` (by the store's clock) when nobody holds it, its holder's
   * has expired, or `holder` holds it already; with `evenIfHeld`, whoever holds it. Every take
   * moves the epoch on, so that the previous holder's fenced writes fail. Null when another holder
   * has it.
   */
  acquireLease(name: string, holder: string, ttlMs: number, options?: { evenIfHeld?: boolean }): Promise<Lease | null>;
  /** Extends the lease by `ttlMs` from now if it is still at this holder and epoch; false if not. */
  renewLease(name: string, fence: LeaseFence, ttlMs: number): Promise<boolean>;
  /** Lets the lease go at once (if still at this holder and epoch), so another instance takes it without waiting. */
  releaseLease(name: string, fence: LeaseFence): Promise<void>;
  /** The lease as stored (expired or not), or null if never taken. */
  lease(name: string): Promise<Lease | null>;
  /**
   * An operator's reset: sets the position (or removes it: `undefined`, from the very start) and
   * revokes the lease in one atomic step, so the holder's next fenced write fails and whoever
   * takes the lease next starts from there.
   */
  reset(name: string, position: string | undefined): Promise<void>;
}

/** A processor's lease: `epoch` grows with every take (the fencing token). */
export interface Lease {
  holder: string;
  epoch: number;
  /** By the store's clock. */
  expiresAt: Date;
}

/** What a fenced write shows: the lease its writer holds. */
export type LeaseFence = Pick<Lease, 'holder' | 'epoch'>;

/** A fenced write whose lease was taken over, released or revoked: the writer is no longer the active instance. */
export class LeaseLostError extends Error {
  constructor(
    readonly processor: string,
    readonly fence: LeaseFence,
  ) {
    super(`the lease of ${processor} is no longer at ${fence.holder} epoch ${fence.epoch}`);
    this.name = 'LeaseLostError';
  }
}

/** A collection to rebuild, with the indexes it must have (beside those the live one has). */
export interface RebuildSpec {
  name: string;
  indexes?: IndexSpec[];
  /** See CollectionOptions.readMostly: how the live collection is opened. */
  readMostly?: boolean;
}

/**
 * A blue/green rebuild of some collections: each gets a fresh, empty stand-in, filled while the
 * live one goes on serving (and being written), then swapped in for it.
 */
export interface ReadModelRebuild {
  /** The stand-in for `name` (one of the names the rebuild began with), through the ordinary API. */
  collection<T extends Doc>(name: string): Collection<T>;
  /** Revision-guarded upserts of many documents at once (SQLite: one transaction; MongoDB: one unordered bulk write). */
  upsertMany<T extends Doc>(name: string, entries: ReadonlyArray<{ doc: T; revision: number }>): Promise<void>;
  /**
   * Waits until every upsertMany so far is written: the embedded store writes them in a thread of
   * its own, and a stand-in read through `collection` shows them only after this.
   */
  drain(): Promise<void>;
  /**
   * Puts every stand-in in place of its live collection, with the declared indexes and those the live
   * one has. `lastly` runs just before, and the checkpoints it answers are set with the swap:
   * SQLite runs it inside the one write transaction that renames the tables and sets the
   * checkpoints, so every other writer (in any process) waits, and all of it takes effect at once;
   * MongoDB cannot hold other writers off: there each stand-in is renamed over its live collection
   * (renameCollection with dropTarget, atomic per collection), then the checkpoints are set.
   * On failure nothing is swapped (SQLite), and the stand-ins are left for discard().
   */
  swap(lastly?: () => Promise<Record<string, string>>): Promise<void>;
  /** Drops the stand-ins that were not swapped in; the live collections stay as they are. */
  discard(): Promise<void>;
  /**
   * A port to the thread that writes the stand-ins (StandInWriter.over writes through it), so that
   * a replay can run in another thread: each call a port of its own. The embedded store, in a file,
   * has it; MongoDB and an in-memory store do not. Such writes are part of what drain and swap wait
   * for only once that thread's writer is closed.
   */
  standInPort?(): StandInPort;
}

/** A rebuild's stand-ins in the embedded store: each collection's stand-in table (quoted), and a port to their writer thread. */
export interface StandInPort {
  tables: Record<string, string>;
  port: MessagePort;
}

export interface ReadStore {
  collection<T extends Doc>(name: string, options?: CollectionOptions): Collection<T>;
  /** Fresh stand-ins for these collections, to fill and swap in (see ReadModelRebuild). */
  beginRebuild(collections: RebuildSpec[]): Promise<ReadModelRebuild>;
  checkpoints: CheckpointStore;
  ping(): Promise<void>;
  close(): Promise<void>;
}
