// The EventStoreDB event store: appends, reads, subscriptions, readiness and leader handling.
// Options are in eventstoredb-options.ts, errors in eventstoredb-errors.ts, deadlines and
// conversions in eventstoredb-calls.ts, the subscription source in eventstoredb-subscription.ts.
import {
  AccessDeniedError,
  AllStreamResolvedEvent,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NotLeaderError,
  Position,
  RecordedEvent as EsdbRecordedEvent,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  jsonEvent,
} from '@eventstore/db-client';
import {
  assertReadAllOptions,
  AppendResult,
  EventStore,
  EventToAppend,
  ExpectedRevision,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeToAllOptions,
  Subscription,
  WrongExpectedRevisionError,
} from './event-store.port';
import { EventStoreLogger, consoleEventStoreLogger } from './event-store-logger';
import { decodePosition, encodePosition, isUnknownPosition } from './esdb-position';
import { ResubscribingFollower } from './resubscribing-follower';
import {
  DEFAULT_APPEND_TIMEOUT_MS,
  DEFAULT_PING_TIMEOUT_MS,
  DEFAULT_READ_TIMEOUT_MS,
  DEFAULT_STALL_PROBE_TIMEOUT_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  EventStoreDbClientLike,
  EventStoreDbOptions,
  withUserInfo,
} from './eventstoredb-options';
import { NotLeaderRetriesExhaustedError, SubscriptionPositionRefusedError, UndeliverableEventError } from './eventstoredb-errors';
import { consumeRead, isDeliverable, toActualRevision, toEsdbExpectedRevision, toRecordedEvent, toRevisionNumber, withDeadline } from './eventstoredb-calls';
import { openSubscription } from './eventstoredb-subscription';

export { withUserInfo } from './eventstoredb-options';
export type { EventStoreDbClientLike, EventStoreDbOptions } from './eventstoredb-options';
export { EventStoreTimeoutError, NotLeaderRetriesExhaustedError, SubscriptionPositionRefusedError, UndeliverableEventError } from './eventstoredb-errors';

/** A stream nobody writes: reading it is the cheapest question the server must answer (StreamNotFound). */
const PING_STREAM = 'event-store-readiness-probe';
/** How far back from the head of `$all` the stall check looks for an event the subscription should have had. */
const STALL_PROBE_WINDOW = 100;
/**
 * A node that is not the leader refuses what requires it with NotLeader, naming the leader; the
 * client then reconnects there. The operation is tried this many times in all, a little apart (the
 * client switches its channel just after reporting the error).
 */
const NOT_LEADER_ATTEMPTS = 3;
const NOT_LEADER_RETRY_MS = 50;

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
  private readonly pingTimeoutMs: number;
  private readonly stallProbeTimeoutMs: number;
  private readonly readTimeoutMs: number;
  private readonly appendTimeoutMs: number;
  private readonly resubscribeBackoff: EventStoreDbOptions['resubscribeBackoff'];
  /** The ping under way: concurrent readiness checks share it rather than piling up reads. */
  private pinging: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly client: EventStoreDbClientLike,
    options: EventStoreDbOptions = {},
  ) {
    this.logger = options.logger ?? consoleEventStoreLogger;
    this.stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (!(this.stallTimeoutMs > 0)) throw new Error(`stallTimeoutMs must be positive, got ${this.stallTimeoutMs}`);
    this.pingTimeoutMs = positive('pingTimeoutMs', options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS);
    this.stallProbeTimeoutMs = positive('stallProbeTimeoutMs', options.stallProbeTimeoutMs ?? DEFAULT_STALL_PROBE_TIMEOUT_MS);
    this.readTimeoutMs = positive('readTimeoutMs', options.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS);
    this.appendTimeoutMs = positive('appendTimeoutMs', options.appendTimeoutMs ?? DEFAULT_APPEND_TIMEOUT_MS);
    this.resubscribeBackoff = options.resubscribeBackoff;
  }

  /**
   * `esdb://host:2113?tls=false`, `esdb+discover://…`: see the EventStoreDB connection string docs.
   * Every call requires the leader (a follower answers NotLeader, and the client reconnects to the
   * leader); with several hosts or discovery, the client also picks the leader first (its default
   * `nodePreference=leader`).
   */
  static connect(connectionString: string, options: EventStoreDbOptions = {}): EventStoreDbEventStore {
    return new EventStoreDbEventStore(EventStoreDBClient.connectionString(withUserInfo(connectionString, options.credentials)), options);
  }

  async append(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
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
      // A NotLeader refusal wrote nothing: trying again on the leader cannot append twice.
      appended = await this.onLeader(`append to stream ${streamId}`, () =>
        withDeadline(
          this.client.appendToStream(
            streamId,
            events.map((event) => jsonEvent({ id: event.id, type: event.type, data: event.data, metadata: event.metadata })),
            { expectedRevision: toEsdbExpectedRevision(expected), requiresLeader: true },
          ),
          { operation: `append to stream ${streamId}`, timeoutMs: this.appendTimeoutMs },
        ),
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
  private async appendResult(streamId: string, lastEventId: string, nextExpectedRevision: bigint, reported: Position | undefined): Promise<AppendResult> {
    const nextRevision = toRevisionNumber(streamId, nextExpectedRevision);
    const [last] = await this.readRaw(streamId, { fromRevision: nextExpectedRevision, maxCount: 1 });
    if (last && last.id.toLowerCase() === lastEventId.toLowerCase() && !isUnknownPosition(last.position)) {
      return { nextRevision, position: encodePosition(last.position!) };
    }
    if (!isUnknownPosition(reported)) {
      this.logger.warn(
        `stream ${streamId}: the appended event ${lastEventId} is not at revision ${nextRevision} on reading back; ` + 'reporting the position of the write',
      );
      return { nextRevision, position: encodePosition(reported!) };
    }
    throw new Error(`stream ${streamId}: the append succeeded, but event ${lastEventId} could not be read back at revision ${nextRevision}`);
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

  /**
   * The stored events as the client gives them, read on the leader (a follower may not have the
   * latest yet: a read after an append, a load before a decision); an absent stream reads as empty.
   * Fails if the server sends nothing for readTimeoutMs.
   */
  private readRaw(streamId: string, options: Parameters<EventStoreDbClientLike['readStream']>[1]): Promise<EsdbRecordedEvent[]> {
    return this.onLeader(`read of stream ${streamId}`, async () => {
      const events: EsdbRecordedEvent[] = [];
      try {
        await consumeRead(
          this.client.readStream(streamId, { ...options, requiresLeader: true }),
          (resolved) => void (resolved.event && events.push(resolved.event)),
          { operation: `read of stream ${streamId}`, timeoutMs: this.readTimeoutMs, idle: true },
        );
      } catch (error) {
        if (error instanceof StreamNotFoundError) return [];
        throw error;
      }
      return events;
    });
  }

  subscribeToAll(options: SubscribeToAllOptions): Subscription {
    this.assertOpen();
    const prefixes = options.streamPrefixes;
    if (prefixes !== undefined && prefixes.length === 0) {
      // Matching nothing is surely not what was meant; receiving everything might be harmful.
      throw new Error('streamPrefixes must not be empty: omit it to receive the events of every stream');
    }
    if (options.fromPosition !== undefined) decodePosition(options.fromPosition); // throws if malformed

    // One stall check at a time per subscription: a check still waiting is answered to whoever asks next.
    let probing: Promise<boolean> | undefined;
    const follower: ResubscribingFollower = new ResubscribingFollower({
      fromPosition: options.fromPosition,
      open: (fromPosition, signals) => openSubscription(this.client, fromPosition, prefixes, signals),
      isStalled: (lastSeen) => (probing ??= this.hasEventsAfter(lastSeen, prefixes).finally(() => (probing = undefined))),
      isPermanent: (error) =>
        error instanceof UndeliverableEventError || error instanceof AccessDeniedError || error instanceof SubscriptionPositionRefusedError,
      onEvent: options.onEvent,
      onError: options.onError,
      stallTimeoutMs: this.stallTimeoutMs,
      ...(this.resubscribeBackoff ? { backoff: this.resubscribeBackoff } : {}),
      logger: this.logger,
      name: `subscription to ${prefixes ? prefixes.join(', ') : 'all streams'}`,
      onFinished: () => this.subscriptions.delete(follower),
    });
    this.subscriptions.add(follower);
    return follower;
  }
  /**
   * `$all` from a position, filtered here: the client's readAll takes no filter, and a server-side
   * filtered read would need a subscription. Reading stops at the page's last matching event.
   */
  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    assertReadAllOptions(options);
    const { fromPosition, maxCount, streamPrefixes } = options;
    // EventStoreDB starts a read at its position, inclusive: that event is the previous page's last.
    const after = fromPosition === undefined ? -1n : BigInt(encodePosition(decodePosition(fromPosition)));
    // On the leader, like every read: a follower may not have the latest events yet (an export or a
    // rebuild would end early, a processor's head check would see an older head).
    return this.onLeader('read of $all', async () => {
      const page: RecordedEvent[] = [];
      await consumeRead(
        this.client.readAll({ direction: FORWARDS, fromPosition: fromPosition === undefined ? START : decodePosition(fromPosition), requiresLeader: true }),
        (resolved: AllStreamResolvedEvent) => {
          const event = resolved.event;
          if (!event || isUnknownPosition(event.position)) return false;
          if (BigInt(encodePosition(event.position)) <= after) return false;
          if (!isDeliverable(event.streamId, event.type, streamPrefixes)) return false;
          page.push(toRecordedEvent(event));
          return page.length === maxCount;
        },
        { operation: 'read of $all', timeoutMs: this.readTimeoutMs, idle: true },
      );
      return page;
    });
  }

  async lastPosition(): Promise<string | null> {
    this.assertOpen();
    return this.onLeader('read of the head of $all', async () => {
      let head: string | null = null;
      await consumeRead(
        this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1, requiresLeader: true }),
        (resolved: AllStreamResolvedEvent) => {
          const event = resolved.event;
          if (!event || isUnknownPosition(event.position)) return false;
          head = encodePosition(event.position);
          return true;
        },
        { operation: 'read of the head of $all', timeoutMs: this.readTimeoutMs },
      );
      return head;
    });
  }

  /**
   * The stall check: whether `$all` holds, near its head, an event after `lastSeen` that the
   * subscription would deliver. A healthy subscription that received nothing for a while has
   * nothing to receive; one that is silent although there is something for it is stuck.
   */
  private async hasEventsAfter(lastSeen: string | undefined, prefixes: string[] | undefined): Promise<boolean> {
    const after = lastSeen === undefined ? -1n : BigInt(lastSeen);
    const started = Date.now();
    return this.onLeader('stall check', async () => {
      let found = false;
      await consumeRead(
        this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: STALL_PROBE_WINDOW, requiresLeader: true }),
        (resolved: AllStreamResolvedEvent) => {
          const event = resolved.event;
          if (!event || isUnknownPosition(event.position)) return false;
          if (BigInt(encodePosition(event.position)) <= after) return true;
          found = isDeliverable(event.streamId, event.type, prefixes);
          return found;
        },
        { operation: 'stall check', timeoutMs: this.stallProbeTimeoutMs, since: started },
      );
      return found;
    });
  }

  /** Reads a stream on the leader within pingTimeoutMs; concurrent calls share one read. */
  async ping(): Promise<void> {
    this.assertOpen();
    this.pinging ??= this.pingOnce().finally(() => {
      this.pinging = undefined;
    });
    return this.pinging;
  }

  private pingOnce(): Promise<void> {
    const started = Date.now();
    return this.onLeader('ping', async () => {
      try {
        await consumeRead(this.client.readStream(PING_STREAM, { maxCount: 1, requiresLeader: true }), () => true, {
          operation: 'ping',
          timeoutMs: this.pingTimeoutMs,
          since: started,
        });
      } catch (error) {
        if (error instanceof StreamNotFoundError) return;
        throw error;
      }
    });
  }

  /**
   * Runs `operation` (which requires the leader), again after a NotLeader refusal, by when the
   * client has reconnected to the leader the refusal named; fails clearly if that keeps happening.
   */
  private async onLeader<T>(operation: string, run: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (error) {
        if (!(error instanceof NotLeaderError)) throw error;
        if (attempt >= NOT_LEADER_ATTEMPTS) throw new NotLeaderRetriesExhaustedError(operation, attempt, error.leader, error);
        await new Promise((resolve) => setTimeout(resolve, NOT_LEADER_RETRY_MS * attempt));
        this.assertOpen();
      }
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

function positive(name: string, value: number): number {
  if (!(value > 0)) throw new Error(`${name} must be positive, got ${value}`);
  return value;
}
