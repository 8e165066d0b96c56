import {
  ANY,
  AccessDeniedError,
  AllStreamResolvedEvent,
  AppendExpectedRevision,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  Position,
  RecordedEvent as EsdbRecordedEvent,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
} from '@eventstore/db-client';
import {
  AppendResult,
  EventStore,
  EventToAppend,
  ExpectedRevision,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeToAllOptions,
  Subscription,
  WrongExpectedRevisionError,
} from './event-store.port';
import { EventStoreLogger, consoleEventStoreLogger } from './event-store-logger';
import { decodePosition, encodePosition, isUnknownPosition } from './esdb-position';
import { FollowedItem, FollowedSource, ResubscribingFollower, SourceSignals } from './resubscribing-follower';

export interface EventStoreDbOptions {
  /** Where dropped subscriptions, resubscriptions and stalls are reported. */
  logger?: EventStoreLogger;
  /**
   * A subscription that received nothing (no event, no checkpoint, no heartbeat) for this long
   * while waiting is checked against the store, and restarted if the store has something for it
   * or does not answer. Default 60 s.
   */
  stallTimeoutMs?: number;
}

/** The parts of the client the adapter uses. */
export type EventStoreDbClientLike = Pick<
  EventStoreDBClient,
  'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'
>;

const DEFAULT_STALL_TIMEOUT_MS = 60_000;
/** A stream nobody writes: reading it is the cheapest question the server must answer (StreamNotFound). */
const PING_STREAM = 'event-store-readiness-probe';
const PING_DEADLINE_MS = 5_000;
/** How far back from the head of `$all` the stall check looks for an event the subscription should have had. */
const STALL_PROBE_WINDOW = 100;
const STALL_PROBE_DEADLINE_MS = 10_000;

/**
 * An event the store holds but the port cannot represent (data or metadata that is not a JSON
 * object): reading it again will not help, so a subscription reaching it stops with onError.
 */
export class UndeliverableEventError extends Error {
  constructor(
    readonly streamId: string,
    readonly revision: bigint,
    reason: string,
  ) {
    super(`event ${revision} of stream ${streamId} cannot be read: ${reason}`);
    this.name = 'UndeliverableEventError';
  }
}

/**
 * The production event store: EventStoreDB (22.6 or later) over gRPC.
 *
 * Positions are `$all` positions packed into one decimal integer (see esdb-position.ts).
 * Subscriptions are catch-up subscriptions to `$all`, filtered on the server, followed by a
 * ResubscribingFollower: resubscription after drops and leader changes, a watchdog against
 * silent stalls.
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly subscriptions = new Set<ResubscribingFollower>();
  private readonly logger: EventStoreLogger;
  private readonly stallTimeoutMs: number;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly client: EventStoreDbClientLike,
    options: EventStoreDbOptions = {},
  ) {
    this.logger = options.logger ?? consoleEventStoreLogger;
    this.stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (!(this.stallTimeoutMs > 0)) throw new Error(`stallTimeoutMs must be positive, got ${this.stallTimeoutMs}`);
  }

  /** `esdb://host:2113?tls=false`, `esdb+discover://…`: see the EventStoreDB connection string docs. */
  static connect(connectionString: string, options: EventStoreDbOptions = {}): EventStoreDbEventStore {
    return new EventStoreDbEventStore(EventStoreDBClient.connectionString(connectionString), options);
  }

  async append(
    streamId: string,
    events: EventToAppend[],
    options: { expectedRevision: ExpectedRevision },
  ): Promise<AppendResult> {
    this.assertOpen();
    // An empty append has no last event whose revision and position the result could report.
    if (events.length === 0) throw new Error(`stream ${streamId}: append needs at least one event`);
    const ids = new Set(events.map((event) => event.id.toLowerCase()));
    if (ids.size !== events.length) throw new Error(`stream ${streamId}: the same event id appears twice in one append`);
    const expected = options.expectedRevision;
    if (typeof expected === 'number' && !(Number.isSafeInteger(expected) && expected >= 0)) {
      throw new Error(`stream ${streamId}: expected revision must be a non-negative integer, got ${expected}`);
    }

    let appended;
    try {
      appended = await this.client.appendToStream(
        streamId,
        events.map((event) => jsonEvent({ id: event.id, type: event.type, data: event.data, metadata: event.metadata })),
        { expectedRevision: toEsdbExpectedRevision(expected) },
      );
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        throw new WrongExpectedRevisionError(streamId, expected, toActualRevision(error.actualVersion));
      }
      throw error;
    }
    // Success also answers a retry of an append already made (EventStoreDB's idempotence by event
    // id, guaranteed for every expectation but `any`): then nextExpectedRevision is that append's
    // last revision, and the position reported, if any, is not reliably its last event's.
    return this.appendResult(streamId, events[events.length - 1]!.id, appended.nextExpectedRevision, appended.position);
  }

  /**
   * The result of an append: the revision the server reports, and the position of the event read
   * back at that revision. Reading it back costs a round trip, but it is the only way to report the
   * position exactly as reads and subscriptions report it: the position of a successful append
   * covers the whole write, and that of an idempotent retry is absent or not the last event's.
   */
  private async appendResult(
    streamId: string,
    lastEventId: string,
    nextExpectedRevision: bigint,
    reported: Position | undefined,
  ): Promise<AppendResult> {
    const nextRevision = toRevisionNumber(streamId, nextExpectedRevision);
    const [last] = await this.readRaw(streamId, { fromRevision: nextExpectedRevision, maxCount: 1 });
    if (last && last.id.toLowerCase() === lastEventId.toLowerCase() && !isUnknownPosition(last.position)) {
      return { nextRevision, position: encodePosition(last.position!) };
    }
    if (!isUnknownPosition(reported)) {
      this.logger.warn(
        `stream ${streamId}: the appended event ${lastEventId} is not at revision ${nextRevision} on reading back; ` +
          'reporting the position of the write',
      );
      return { nextRevision, position: encodePosition(reported!) };
    }
    throw new Error(
      `stream ${streamId}: the append succeeded, but event ${lastEventId} could not be read back at revision ${nextRevision}`,
    );
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { fromRevision, maxCount } = options;
    if (fromRevision !== undefined && !(Number.isSafeInteger(fromRevision) && fromRevision >= 0)) {
      throw new Error(`fromRevision must be a non-negative integer, got ${fromRevision}`);
    }
    if (maxCount !== undefined && !(Number.isSafeInteger(maxCount) && maxCount >= 0)) {
      throw new Error(`maxCount must be a non-negative integer, got ${maxCount}`);
    }
    if (maxCount === 0) return [];
    const backwards = options.direction === 'backwards';
    const events = await this.readRaw(streamId, {
      direction: backwards ? BACKWARDS : FORWARDS,
      fromRevision: fromRevision !== undefined ? BigInt(fromRevision) : backwards ? END : START,
      ...(maxCount !== undefined ? { maxCount } : {}),
    });
    return events.map(toRecordedEvent);
  }

  /** The stored events as the client gives them; an absent stream reads as empty. */
  private async readRaw(
    streamId: string,
    options: Parameters<EventStoreDbClientLike['readStream']>[1],
  ): Promise<EsdbRecordedEvent[]> {
    const events: EsdbRecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(streamId, options)) {
        if (resolved.event) events.push(resolved.event);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  subscribeToAll(options: SubscribeToAllOptions): Subscription {
    this.assertOpen();
    const prefixes = options.streamPrefixes;
    if (prefixes !== undefined && prefixes.length === 0) {
      // Matching nothing is surely not what was meant; receiving everything might be harmful.
      throw new Error('streamPrefixes must not be empty: omit it to receive the events of every stream');
    }
    if (options.fromPosition !== undefined) decodePosition(options.fromPosition); // throws if malformed

    const follower: ResubscribingFollower = new ResubscribingFollower({
      fromPosition: options.fromPosition,
      open: (fromPosition, signals) => this.openSubscription(fromPosition, prefixes, signals),
      isStalled: (lastSeen) => this.hasEventsAfter(lastSeen, prefixes),
      isPermanent: (error) => error instanceof UndeliverableEventError || error instanceof AccessDeniedError,
      onEvent: options.onEvent,
      onError: options.onError,
      stallTimeoutMs: this.stallTimeoutMs,
      logger: this.logger,
      name: `subscription to ${prefixes ? prefixes.join(', ') : 'all streams'}`,
      onFinished: () => this.subscriptions.delete(follower),
    });
    this.subscriptions.add(follower);
    return follower;
  }

  /** One catch-up subscription to `$all`, strictly after `fromPosition`, as a source of items. */
  private openSubscription(
    fromPosition: string | undefined,
    prefixes: string[] | undefined,
    signals: SourceSignals,
  ): FollowedSource {
    // Checkpoints (sent by the server for filtered subscriptions, also while nothing matches) are
    // proof of life, and tell how far the server has looked.
    const checkpointReached = (_subscription: unknown, position: Position) => {
      signals.alive(isUnknownPosition(position) ? undefined : encodePosition(position));
    };
    const subscription = this.client.subscribeToAll({
      fromPosition: fromPosition === undefined ? START : decodePosition(fromPosition),
      filter: prefixes
        ? streamNameFilter({ prefixes, checkpointReached })
        : excludeSystemEvents({ checkpointReached }),
    });
    const alive = () => signals.alive();
    subscription.on('confirmation', alive).on('caughtUp', alive).on('fellBehind', alive);
    // The iteration reports errors; this keeps one coming after it has stopped from crashing the process.
    subscription.on('error', () => {});

    return {
      [Symbol.asyncIterator]: async function* (): AsyncGenerator<FollowedItem> {
        // Pulling one event at a time from the stream holds the server back while a handler runs.
        for await (const resolved of subscription as AsyncIterable<AllStreamResolvedEvent>) {
          const event = resolved.event;
          if (!event || isUnknownPosition(event.position)) {
            signals.alive();
            continue;
          }
          if (!isDeliverable(event.streamId, event.type, prefixes)) {
            yield { kind: 'skipped', position: encodePosition(event.position) };
          } else {
            yield { kind: 'event', event: toRecordedEvent(event) };
          }
        }
      },
      close: async () => {
        try {
          await subscription.unsubscribe();
        } finally {
          subscription.destroy();
        }
      },
    };
  }

  /**
   * The stall check: whether `$all` holds, near its head, an event after `lastSeen` that the
   * subscription would deliver. A healthy subscription that received nothing for a while has
   * nothing to receive; one that is silent although there is something for it is stuck.
   */
  private async hasEventsAfter(lastSeen: string | undefined, prefixes: string[] | undefined): Promise<boolean> {
    const after = lastSeen === undefined ? -1n : BigInt(lastSeen);
    const read = this.client.readAll({
      direction: BACKWARDS,
      fromPosition: END,
      maxCount: STALL_PROBE_WINDOW,
      deadline: STALL_PROBE_DEADLINE_MS,
    });
    try {
      for await (const resolved of read as AsyncIterable<AllStreamResolvedEvent>) {
        const event = resolved.event;
        if (!event || isUnknownPosition(event.position)) continue;
        if (BigInt(encodePosition(event.position)) <= after) return false;
        if (isDeliverable(event.streamId, event.type, prefixes)) return true;
      }
      return false;
    } finally {
      read.cancel().catch(() => undefined);
    }
  }

  async ping(): Promise<void> {
    this.assertOpen();
    try {
      for await (const _ of this.client.readStream(PING_STREAM, { maxCount: 1, deadline: PING_DEADLINE_MS })) break;
    } catch (error) {
      if (error instanceof StreamNotFoundError) return;
      throw error;
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((subscription) => subscription.close()));
      await this.client.dispose();
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('the event store is closed');
  }
}

function toEsdbExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
}

/** The client reports an absent stream as `no_stream`, or as -1 when it comes from error metadata. */
function toActualRevision(actual: WrongExpectedVersionError['actualVersion']): number | 'no_stream' {
  return typeof actual === 'bigint' && actual >= 0n ? Number(actual) : 'no_stream';
}

function toRevisionNumber(streamId: string, revision: bigint): number {
  const value = Number(revision);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`stream ${streamId}: revision ${revision} out of range`);
  return value;
}

/** System streams and events (`$`-prefixed) are never delivered; nor, with prefixes, other streams. */
function isDeliverable(streamId: string, type: string, prefixes: string[] | undefined): boolean {
  if (streamId.startsWith('$') || type.startsWith('$')) return false;
  return prefixes === undefined || prefixes.some((prefix) => streamId.startsWith(prefix));
}

function toRecordedEvent(event: EsdbRecordedEvent): RecordedEvent {
  if (!event.isJson || !isJsonObject(event.data)) {
    throw new UndeliverableEventError(event.streamId, event.revision, 'its data is not a JSON object');
  }
  const metadata = event.metadata === undefined ? {} : event.metadata;
  if (!isJsonObject(metadata)) {
    throw new UndeliverableEventError(event.streamId, event.revision, 'its metadata is not a JSON object');
  }
  if (isUnknownPosition(event.position)) {
    // Stream reads carry positions from EventStoreDB 22.6 on (not for events of explicit transactions).
    throw new UndeliverableEventError(event.streamId, event.revision, 'the server did not report its position');
  }
  return {
    id: event.id,
    streamId: event.streamId,
    type: event.type,
    revision: toRevisionNumber(event.streamId, event.revision),
    position: encodePosition(event.position!),
    data: event.data,
    metadata,
    occurredAt: event.created.toISOString(),
  };
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
