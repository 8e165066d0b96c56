/**
 * The event store port: the source of truth. Streams are named `<category>-<id>`
 * (`dispatch-dsp_…`, `webhook-whk_…`, `account-acct_…`, `connection-con_…`).
 * Adapters: SQLite (embedded, `sqlite-event-store.ts`) and EventStoreDB (production).
 */
export const EVENT_STORE = Symbol('EVENT_STORE');

export interface EventToAppend {
  /** UUID. Appending the same ids again at the same place is a no-op (idempotent append). */
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

export interface RecordedEvent {
  id: string;
  streamId: string;
  type: string;
  /** 0-based position of the event in its stream. */
  revision: number;
  /** Opaque global position, for checkpoints. Increases with every append across all streams. */
  position: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** ISO 8601 UTC with milliseconds. */
  occurredAt: string;
}

/** A recorded event whose data and metadata are their RFC 8785 canonical JSON text (JCS): what exports hash. */
export interface CanonicalEvent extends Omit<RecordedEvent, 'data' | 'metadata'> {
  data: string;
  metadata: string;
}

/**
 * An event as a replay (a rebuild) folds it: a recorded event without its id and time, whose
 * metadata holds at least the schema `version` it was written at (where a store can give only
 * that, it does), as the upcasters need it.
 */
export type ReplayedEvent = Omit<RecordedEvent, 'id' | 'occurredAt'>;

/** `no_stream`: the stream must not exist; a number: the revision of its last event. */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

export interface AppendResult {
  /** Revision of the last event now in the stream. */
  nextRevision: number;
  position: string;
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  /** Inclusive; defaults to the first (forwards) or last (backwards) event. */
  fromRevision?: number;
  maxCount?: number;
}

export interface SubscribeToAllOptions {
  /** Deliver events strictly after this position; absent: from the very start. */
  fromPosition?: string;
  /** Only events of streams whose id starts with one of these prefixes (e.g. `dispatch-`). */
  streamPrefixes?: string[];
  /** Awaited for each event, in global order. If it throws, the subscription stops and `onError` is called. */
  onEvent(event: RecordedEvent): Promise<void>;
  onError?(error: Error): void;
}

export interface ReadAllOptions {
  /** Events strictly after this position; absent: from the very start. */
  fromPosition?: string;
  /** At most this many events (1..10000): a page. */
  maxCount: number;
  /** Only events of streams whose id starts with one of these prefixes (e.g. `dispatch-`). */
  streamPrefixes?: string[];
}

export interface CanonicalReadOptions extends ReadAllOptions {
  /** Events at or before this position only (inclusive); absent: up to the store's end. */
  toPosition?: string;
}

export interface Subscription {
  close(): Promise<void>;
}

export interface EventStore {
  append(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;
  /** An absent stream reads as an empty array. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  subscribeToAll(options: SubscribeToAllOptions): Subscription;
  /**
   * One page of every stream's events (system events aside) in global (commit) order, as
   * subscriptions deliver them. Fewer than `maxCount` events: nothing more after them for now.
   * The next page starts after the last event's position. For exports and rebuilds, which read
   * everything once, without a subscription's loop.
   */
  readAll(options: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * readAll with data and metadata as canonical text, where the store keeps that form (the embedded
   * one does): an export passes it through rather than parsing and canonicalizing every event.
   */
  readAllCanonical?(options: CanonicalReadOptions): Promise<CanonicalEvent[]>;
  /**
   * readAll for a replay, where the store can leave out what a replay does not use (the embedded
   * one can: ids, times, and metadata other than a whole-number version are a good part of the
   * cost of reading every event). Stores without it are replayed with readAll.
   */
  readAllForReplay?(options: ReplayReadOptions): Promise<ReplayedEvent[]>;
  /** The position of the last event in the store (of any stream), or null when it is empty: how far a read of everything goes. */
  lastPosition(): Promise<string | null>;
  /** Reachable and answering, for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const MAX_READ_ALL_COUNT = 10_000;

/** What every adapter checks of a readAll's options before reading. */
/** readAllForReplay's: readAll's, and perhaps one share of the streams (replays side by side each read one). */
export interface ReplayReadOptions extends ReadAllOptions {
  /**
   * Only the streams of share `index` (0-based) of `of`, told by the last character of their id
   * (its code point modulo `of`): each stream is in exactly one share, whole.
   */
  share?: { index: number; of: number };
}

export function assertReadAllOptions(options: ReplayReadOptions): void {
  const { maxCount, streamPrefixes, share } = options;
  if (
    share !== undefined &&
    !(Number.isSafeInteger(share.of) && share.of >= 1 && Number.isSafeInteger(share.index) && share.index >= 0 && share.index < share.of)
  ) {
    throw new RangeError(`share must be { index, of } with 0 <= index < of, got ${JSON.stringify(share)}`);
  }
  if (!Number.isSafeInteger(maxCount) || maxCount < 1 || maxCount > MAX_READ_ALL_COUNT) {
    throw new RangeError(`maxCount must be an integer in 1..${MAX_READ_ALL_COUNT}, got ${maxCount}`);
  }
  if (streamPrefixes !== undefined && streamPrefixes.length === 0) {
    throw new Error('streamPrefixes must not be empty: omit it to read the events of every stream');
  }
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/**
 * The event store refused a subscription's start position (EventStoreDB: INVALID_ARGUMENT): typically a checkpoint
 * kept in the read store while the event store was recreated or restored. Resubscribing from it
 * cannot succeed, so the subscription stops with this error.
 */
export class SubscriptionPositionRefusedError extends Error {
  constructor(
    readonly fromPosition: string | undefined,
    override readonly cause: unknown,
  ) {
    const from = fromPosition === undefined ? 'the start' : `position ${fromPosition}`;
    super(
      `EventStoreDB refuses to subscribe from ${from}: ${cause instanceof Error ? cause.message : String(cause)}. Resubscribing from it cannot succeed: ` +
        'if this is a processor checkpoint, it is not a position of this database (was the event store recreated ' +
        'or restored while the read store kept its checkpoints?); reset the checkpoint',
    );
    this.name = 'SubscriptionPositionRefusedError';
  }
}
