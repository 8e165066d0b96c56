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

export interface CollectionOptions {
  /** Top-level fields that filters use; adapters index them. */
  indexes?: string[];
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
  delete(id: string): Promise<boolean>;
}

export interface CheckpointStore {
  get(name: string): Promise<string | undefined>;
  set(name: string, position: string): Promise<void>;
}

export interface ReadStore {
  collection<T extends Doc>(name: string, options?: CollectionOptions): Collection<T>;
  checkpoints: CheckpointStore;
  ping(): Promise<void>;
  close(): Promise<void>;
}
