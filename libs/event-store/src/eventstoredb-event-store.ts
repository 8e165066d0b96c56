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
  NotLeaderError,
  Position,
  RecordedEvent as EsdbRecordedEvent,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnknownError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
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
import { FollowedItem, FollowedSource, ResubscribingFollower, SourceSignals } from './resubscribing-follower';

export interface EventStoreDbOptions {
  /** The user every call runs as, kept out of the connection string so the string can be shown. */
  credentials?: { user: string; password: string };
  /** Where dropped subscriptions, resubscriptions and stalls are reported. */
  logger?: EventStoreLogger;
  /**
   * A subscription that received nothing (no event, no checkpoint, no heartbeat) for this long
   * while waiting is checked against the store, and restarted if the store has something for it
   * or does not answer. Default 60 s.
   */
  stallTimeoutMs?: number;
  /**
   * How long `ping` waits for its answer (the client ignores read deadlines: it sets them to
   * Infinity). Default 5 s.
   */
  pingTimeoutMs?: number;
  /** How long the stall check waits for its answer before counting the subscription as stuck. Default 10 s. */
  stallProbeTimeoutMs?: number;
  /** How long a read (a stream, a page of `$all`, the head) waits for the next answer from the server before failing. Default 10 s. */
  readTimeoutMs?: number;
  /**
   * How long an append waits for its answer before failing. The client sends appends over one
   * long-lived BatchAppend call whose gRPC deadline it sets to Infinity, so a node that stays
   * connected but stops answering would hold an append (and the launch waiting on it) for good.
   * An append given up on may still be written later: callers treat the failure as unknown (the
   * launch path by its Idempotency-Key, see dispatch-idempotency.ts). Default 10 s.
   */
  appendTimeoutMs?: number;
  /** Backoff of resubscriptions that made no progress (see ResubscribingFollower). Default 200 ms doubling to 15 s. */
  resubscribeBackoff?: { initialMs?: number; maxMs?: number };
}

/** The parts of the client the adapter uses. */
export type EventStoreDbClientLike = Pick<
  EventStoreDBClient,
  'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'
>;

const DEFAULT_STALL_TIMEOUT_MS = 60_000;
/** A stream nobody writes: reading it is the cheapest question the server must answer (StreamNotFound). */
const PING_STREAM = 'event-store-readiness-probe';
const DEFAULT_PING_TIMEOUT_MS = 5_000;
/** How far back from the head of `$all` the stall check looks for an event the subscription should have had. */
const STALL_PROBE_WINDOW = 100;
const DEFAULT_STALL_PROBE_TIMEOUT_MS = 10_000;
const DEFAULT_READ_TIMEOUT_MS = 10_000;
const DEFAULT_APPEND_TIMEOUT_MS = 10_000;
/**
 * A node that is not the leader refuses what requires it with NotLeader, naming the leader; the
 * client then reconnects there. The operation is tried this many times in all, a little apart (the
 * client switches its channel just after reporting the error).
 */
const NOT_LEADER_ATTEMPTS = 3;
const NOT_LEADER_RETRY_MS = 50;
/** gRPC's INVALID_ARGUMENT: the server refuses the request as such; asking again cannot help. */
const GRPC_INVALID_ARGUMENT = 3;

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

/** EventStoreDB accepted a call and then sent nothing for `timeoutMs`: the call is cancelled. */
export class EventStoreTimeoutError extends Error {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super(`EventStoreDB did not answer within ${timeoutMs} ms (${operation})`);
    this.name = 'EventStoreTimeoutError';
  }
}

/** The node kept answering NotLeader, even after the client reconnected to the leader it named. */
export class NotLeaderRetriesExhaustedError extends Error {
  constructor(
    readonly operation: string,
    readonly attempts: number,
    readonly leader: { address: string; port: number } | undefined,
    override readonly cause: unknown,
  ) {
    const where = leader ? ` (it names the leader at ${leader.address}:${leader.port})` : '';
    super(
      `${operation}: the EventStoreDB node is not the leader${where}, ${attempts} times in a row; ` +
        'the cluster may be electing a leader, or the nodes disagree on which one it is',
    );
    this.name = 'NotLeaderRetriesExhaustedError';
  }
}

/**
 * EventStoreDB refused a subscription's start position (INVALID_ARGUMENT): typically a checkpoint
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
      `EventStoreDB refuses to subscribe from ${from}: ${describeError(cause)}. Resubscribing from it cannot succeed: ` +
        'if this is a processor checkpoint, it is not a position of this database (was the event store recreated ' +
        'or restored while the read store kept its checkpoints?); reset the checkpoint',
    );
    this.name = 'SubscriptionPositionRefusedError';
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
      open: (fromPosition, signals) => this.openSubscription(fromPosition, prefixes, signals),
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
      // On a follower, NotLeader drops it and the client reconnects to the leader: the resubscription goes there.
      requiresLeader: true,
    });
    const alive = () => signals.alive();
    subscription.on('confirmation', alive).on('caughtUp', alive).on('fellBehind', alive);
    // The iteration reports errors; this keeps one coming after it has stopped from crashing the process.
    subscription.on('error', () => {});

    return {
      [Symbol.asyncIterator]: async function* (): AsyncGenerator<FollowedItem> {
        try {
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
        } catch (error) {
          // The client reports INVALID_ARGUMENT without an exception name as an UnknownError.
          if (error instanceof UnknownError && error.code === GRPC_INVALID_ARGUMENT) {
            throw new SubscriptionPositionRefusedError(fromPosition, error);
          }
          throw error;
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

/** A read as the client returns it: resolved events, and a way to cancel the gRPC call. */
type ClientRead<Resolved> = AsyncIterable<Resolved> & { cancel(): Promise<void> };

/**
 * Iterates a read, giving each resolved event to `take` until it returns true or the read ends.
 * The client overrides every read's deadline with Infinity, so this keeps its own: if the server
 * sends nothing for `timeoutMs` (since `since`, by default now, or with `idle` since the last
 * event), it gives up with EventStoreTimeoutError. Either way the gRPC call is cancelled at the
 * end, so a node that stopped answering is not left holding reads.
 */
async function consumeRead<Resolved>(
  read: ClientRead<Resolved>,
  take: (resolved: Resolved) => boolean | void,
  { operation, timeoutMs, since = Date.now(), idle = false }: { operation: string; timeoutMs: number; since?: number; idle?: boolean },
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let giveUp: (error: Error) => void = () => undefined;
  const timedOut = new Promise<never>((_, reject) => (giveUp = reject));
  const arm = (from: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => giveUp(new EventStoreTimeoutError(operation, timeoutMs)), Math.max(0, from + timeoutMs - Date.now()));
  };
  const iterator = read[Symbol.asyncIterator]();
  arm(since);
  try {
    for (;;) {
      const next = iterator.next();
      // Once given up on, this may still settle (or never): either way nobody waits for it.
      next.catch(() => undefined);
      const result = await Promise.race([next, timedOut]);
      if (result.done) return;
      if (take(result.value) === true) return;
      if (idle) arm(Date.now());
    }
  } finally {
    clearTimeout(timer);
    read.cancel().catch(() => undefined);
    Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
}

/** The call's outcome, or EventStoreTimeoutError once `timeoutMs` has passed without one (the call itself is left to settle unobserved). */
function withDeadline<T>(call: Promise<T>, { operation, timeoutMs }: { operation: string; timeoutMs: number }): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  call.catch(() => undefined);
  return Promise.race([
    call,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new EventStoreTimeoutError(operation, timeoutMs)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}

function positive(name: string, value: number): number {
  if (!(value > 0)) throw new Error(`${name} must be positive, got ${value}`);
  return value;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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

/** `esdb://user:password@host…`: how the client takes its default credentials from a connection string. */
export function withUserInfo(connectionString: string, credentials: { user: string; password: string } | undefined): string {
  if (!credentials) return connectionString;
  const match = /^(esdb(?:\+discover)?:\/\/)(?:[^@/?]*@)?(.*)$/.exec(connectionString);
  if (!match) throw new Error('credentials need an esdb:// or esdb+discover:// connection string');
  return `${match[1]}${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@${match[2]}`;
}
