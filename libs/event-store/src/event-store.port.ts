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

export interface Subscription {
  close(): Promise<void>;
}

export interface EventStore {
  append(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;
  /** An absent stream reads as an empty array. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  subscribeToAll(options: SubscribeToAllOptions): Subscription;
  /** Reachable and answering, for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
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
