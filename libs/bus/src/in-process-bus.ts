import {
  Bus,
  BusUnavailableError,
  Consumer,
  ConsumerOptions,
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_MAX_DELIVER,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DeliveredMessage,
  HandlerOutcome,
  ListParkedOptions,
  ParkedMessage,
  ParkedMessageNotFoundError,
  PublishOptions,
  RequestContext,
  RequestOptions,
  ConsumerProgress,
  laneCount,
} from './bus.port';
import { BusLogger, consoleBusLogger } from './bus-logger';
import { replyWithin } from './reply-within';
import { decodePayload, encodePayload, errorMessage } from './payload';
import { failureReason, parkedQuery, RETRY_ON_LAST_DELIVERY } from './parking';
import { backoffAfterFailureMs, keepWhileHandling } from './redelivery';
import { ClaimedDelivery, SqliteBusStore } from './sqlite-bus-store';
import { assertConsumerSubject, assertDurableName, assertPublishSubject, subjectMatches } from './subjects';

export interface InProcessBusOptions {
  /** SQLite file holding the durable events and consumer positions. Default `:memory:` (nothing survives close). */
  file?: string;
  /**
   * How often the bus looks whether another process on the same file changed it (published, or
   * made a delivery due: a parked message replayed by the ops CLI); if so, each durable's idle
   * consumers look for work. Default 100 ms.
   */
  pollIntervalMs?: number;
  logger?: BusLogger;
  /**
   * This process is the file's only user (the standalone deployment): leases left by a previous
   * run that died are released at once, so its work resumes right after a restart instead of
   * after the ack wait. Never set it where several processes share the file.
   */
  releaseLeasesOnOpen?: boolean;
  /**
   * How often messages every durable is done with, and older than 24 h, are deleted from the file
   * (SqliteBusStore.purge). Default 10 minutes.
   */
  purgeIntervalMs?: number;
}

const DEFAULT_POLL_INTERVAL_MS = 100;
const DEFAULT_PURGE_INTERVAL_MS = 10 * 60_000;
// Rows one purge step deletes before letting consumers and requests run again.
const PURGE_SLICE_ROWS = 1000;

type RequestHandler = (data: unknown, context: RequestContext) => Promise<unknown>;
type MessageHandler = (message: DeliveredMessage<unknown>) => Promise<HandlerOutcome>;

/** The replicas responding on one subject pattern: each request goes to the next one. */
interface ResponderGroup {
  pattern: string;
  handlers: RequestHandler[];
  next: number;
}

/**
 * The bus inside one process (the standalone deployment): request/reply is a function call,
 * durable events live in SQLite. It behaves like the NATS adapter as far as callers can tell:
 * payloads are copied through JSON, subjects use NATS wildcards, delivery is at-least-once with
 * ack wait, retries and maxDeliver.
 */
export class InProcessBus implements Bus {
  private closed = false;
  private readonly responderGroups: ResponderGroup[] = [];
  private readonly consumers = new Set<InProcessConsumer>();
  /** The lanes of one durable in this process claim together (see SharedClaims). */
  private readonly claims = new Map<string, SharedClaims>();
  /** Deliveries settled by this process's consumers, by durable (see progress). */
  private readonly settled = new Map<string, number>();
  private readonly purgeTimer: NodeJS.Timeout;
  private readonly pollTimer: NodeJS.Timeout;
  private seenVersion: number;
  private purging: Promise<void> | undefined;

  private constructor(
    private readonly store: SqliteBusStore,
    pollIntervalMs: number,
    purgeIntervalMs: number,
    private readonly logger: BusLogger,
  ) {
    // Unref'd: a bus nobody closed does not keep the process alive for its housekeeping.
    this.purgeTimer = setInterval(() => void this.purgeOldMessages(), purgeIntervalMs);
    this.purgeTimer.unref();
    // One cheap look for the whole bus (SQLite's data_version), not one claim per consumer: an idle
    // process wakes nothing while nobody else writes the file.
    this.seenVersion = store.dataVersion();
    this.pollTimer = setInterval(() => this.lookForOthersWrites(), pollIntervalMs);
    this.pollTimer.unref();
  }

  static open(options: InProcessBusOptions = {}): InProcessBus {
    const store = new SqliteBusStore(options.file ?? ':memory:');
    if (options.releaseLeasesOnOpen) store.releaseAllLeases();
    return new InProcessBus(
      store,
      options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
      options.purgeIntervalMs ?? DEFAULT_PURGE_INTERVAL_MS,
      options.logger ?? consoleBusLogger,
    );
  }

  async request<Res = unknown, Req = unknown>(subject: string, data: Req, options: RequestOptions = {}): Promise<Res> {
    this.assertOpen(subject);
    const handler = this.pickResponder(subject);
    if (!handler) throw new BusUnavailableError(subject, 'no responders');
    const request = encodePayload(data);
    const context: RequestContext = { subject, headers: { ...options.headers } };
    // Through JSON like the request: the caller gets a copy, and an unserializable result fails as on NATS.
    const reply = (async () => decodePayload<Res>(encodePayload(await handler(decodePayload(request), context))))();
    return replyWithin(subject, reply, options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  }

  async respond<Req = unknown, Res = unknown>(subject: string, handler: (data: Req, context: RequestContext) => Promise<Res>): Promise<void> {
    this.assertOpen(subject);
    let group = this.responderGroups.find((candidate) => candidate.pattern === subject);
    if (!group) {
      group = { pattern: subject, handlers: [], next: 0 };
      this.responderGroups.push(group);
    }
    group.handlers.push(handler as RequestHandler);
  }

  async publish<T>(subject: string, data: T, options: PublishOptions = {}): Promise<void> {
    assertPublishSubject(subject);
    this.assertOpen(subject);
    await this.store.append(subject, encodePayload(data), { ...options.headers }, options.msgId);
    // One message: one idle lane of each durable that takes it is enough. Lanes already at work
    // claim again when they finish; waking every lane would have them all contend for one message.
    const woken = new Set<string>();
    for (const consumer of this.consumers) {
      if (woken.has(consumer.durable) || !consumer.idle || !subjectMatches(consumer.filter, subject)) continue;
      consumer.wake();
      woken.add(consumer.durable);
    }
  }

  async consume<T>(options: ConsumerOptions, handler: (message: DeliveredMessage<T>) => Promise<HandlerOutcome>): Promise<Consumer> {
    assertConsumerSubject(options.subject);
    assertDurableName(options.durable);
    const lanes = laneCount(options);
    this.assertOpen(options.subject);
    this.store.registerConsumer(options.durable, options.subject);
    const settings: InProcessConsumerSettings = {
      durable: options.durable,
      filter: options.subject,
      ackWaitMs: options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS,
      maxHandlingMs: options.maxHandlingMs,
      maxDeliver: options.maxDeliver ?? DEFAULT_MAX_DELIVER,
    };
    const key = JSON.stringify([settings.durable, settings.filter, settings.ackWaitMs, settings.maxDeliver]);
    let claims = this.claims.get(key);
    if (!claims) {
      claims = new SharedClaims(this.store, settings, this.logger);
      this.claims.set(key, claims);
    }
    // A lane is a consumer of its own; the lanes of a durable claim together (SharedClaims).
    const laneConsumers = Array.from({ length: lanes }, () => {
      const consumer = new InProcessConsumer(
        this.store,
        settings,
        claims,
        handler as MessageHandler,
        this.logger,
        () => this.consumers.delete(consumer),
        () => void this.settled.set(options.durable, (this.settled.get(options.durable) ?? 0) + 1),
      );
      this.consumers.add(consumer);
      return consumer;
    });
    return lanes === 1 ? laneConsumers[0] : { stop: async () => void (await Promise.all(laneConsumers.map((lane) => lane.stop()))) };
  }

  async pending(durable: string): Promise<number> {
    return this.store.pending(durable);
  }

  async progress(durable: string): Promise<ConsumerProgress> {
    return { pending: this.store.pending(durable), settled: this.settled.get(durable) ?? 0 };
  }

  async listParked(options?: ListParkedOptions): Promise<ParkedMessage[]> {
    const { durable, limit } = parkedQuery(options);
    this.assertOpen('in-process bus');
    return this.store.listParked(durable, limit).map((row) => ({
      id: `${row.durable}:${row.seq}`,
      durable: row.durable,
      subject: row.subject,
      data: decodePayload(row.data),
      headers: row.headers,
      deliveryCount: row.deliveryCount,
      parkedAt: new Date(row.parkedAt).toISOString(),
      reason: row.reason,
    }));
  }

  /** The row goes back in the durable's queue, due now: only that durable sees the message again. */
  async replayParked(id: string): Promise<void> {
    this.assertOpen('in-process bus');
    // Durable names cannot hold ':', so the last one separates the sequence.
    const separator = id.lastIndexOf(':');
    const durable = id.slice(0, separator);
    const seq = id.slice(separator + 1);
    if (separator < 1 || !/^[1-9]\d*$/.test(seq) || !this.store.replay(durable, Number(seq))) throw new ParkedMessageNotFoundError(id);
    // Consumers in other processes on the same file find it at their next poll.
    for (const consumer of this.consumers) {
      if (consumer.durable === durable) consumer.wake();
    }
  }

  async ping(): Promise<void> {
    this.assertOpen('in-process bus');
  }

  /** Stops every consumer (waiting for handlers in flight), then closes the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.purgeTimer);
    clearInterval(this.pollTimer);
    await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
    await this.purging;
    this.store.close();
  }

  private lookForOthersWrites(): void {
    let version: number;
    try {
      version = this.store.dataVersion();
    } catch (error) {
      this.logger.warn(`in-process bus: cannot look for other processes' writes (${errorMessage(error)}), retrying`);
      return;
    }
    if (version === this.seenVersion) return;
    this.seenVersion = version;
    for (const claims of this.claims.values()) claims.wakeOne();
  }

  /**
   * Deletes what SqliteBusStore.purge may, a slice at a time, yielding between slices so a large
   * first purge does not stall handlers. Each process on a shared file purges; they agree on what goes.
   */
  private purgeOldMessages(): Promise<void> {
    // `.finally` runs after the assignment even when the purge finishes without awaiting anything.
    this.purging ??= this.purgeInSlices().finally(() => (this.purging = undefined));
    return this.purging;
  }

  private async purgeInSlices(): Promise<void> {
    try {
      while (!this.closed && this.store.purge(Date.now(), PURGE_SLICE_ROWS) === PURGE_SLICE_ROWS) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      // E.g. SQLITE_BUSY while another process holds the file: the next interval tries again.
      this.logger.warn(`in-process bus: cannot purge old messages (${errorMessage(error)}), retrying at the next interval`);
    }
  }

  /**
   * NATS sends a request to every queue group whose subject matches and keeps the first reply;
   * here the first matching group (in registration order) answers, its replicas taking turns.
   */
  private pickResponder(subject: string): RequestHandler | undefined {
    const group = this.responderGroups.find((candidate) => subjectMatches(candidate.pattern, subject));
    if (!group) return undefined;
    const handler = group.handlers[group.next % group.handlers.length];
    group.next = (group.next + 1) % group.handlers.length;
    return handler;
  }

  private assertOpen(subject: string): void {
    if (this.closed) throw new BusUnavailableError(subject, 'bus closed');
  }
}

interface InProcessConsumerSettings {
  durable: string;
  filter: string;
  ackWaitMs: number;
  maxHandlingMs: number | undefined;
  maxDeliver: number;
}

/** Deliveries one claim may lease for the lanes of a durable. */
const MAX_CLAIM_BATCH = 64;

/**
 * The lanes of one durable in this process (consume() called several times with the same
 * settings, as a transport's `lanes` does): a lane that finds nothing in hand claims for itself and
 * for every idle lane at once, one transaction for the lot, and wakes those lanes to take theirs.
 * Nothing is claimed that no lane is free to handle at once, so a claimed delivery waits for no
 * other one to finish; what is left in hand when the last lane stops is given back.
 */
class SharedClaims {
  private readonly inHand: ClaimedDelivery[] = [];
  readonly lanes = new Set<InProcessConsumer>();

  constructor(
    private readonly store: SqliteBusStore,
    private readonly settings: InProcessConsumerSettings,
    private readonly logger: BusLogger,
  ) {}

  /** The next delivery for `lane` to handle, or undefined when none is due. */
  take(lane: InProcessConsumer): ClaimedDelivery | undefined {
    const inHand = this.inHand.shift();
    if (inHand) return inHand;
    const { durable, filter, ackWaitMs, maxDeliver } = this.settings;
    const idle = [...this.lanes].filter((other) => other !== lane && other.idle).slice(0, MAX_CLAIM_BATCH - 1);
    const { claimed, parked } = this.store.claim(durable, filter, ackWaitMs, maxDeliver, 1 + idle.length);
    for (const delivery of parked) {
      this.logger.error(
        `consumer ${durable}: ${delivery.subject} #${delivery.seq} parked (id ${durable}:${delivery.seq}) after ${delivery.deliveryCount} deliveries (maxDeliver): ${delivery.reason}`,
      );
    }
    const [first, ...rest] = claimed;
    this.inHand.push(...rest);
    for (const other of idle.slice(0, rest.length)) other.wake();
    return first;
  }

  /** Another process changed the file: one idle lane looks (its claim takes work for every idle lane). */
  wakeOne(): void {
    for (const lane of this.lanes) {
      if (!lane.idle) continue;
      lane.wake();
      return;
    }
  }

  /** A lane stopped: the last one gives back what is in hand. */
  leave(lane: InProcessConsumer): void {
    this.lanes.delete(lane);
    if (this.lanes.size > 0) return;
    for (const delivery of this.inHand.splice(0)) {
      try {
        this.store.unclaim(this.settings.durable, delivery);
      } catch (error) {
        // Its lease runs out instead (at once at the next standalone start).
        this.logger.warn(`consumer ${this.settings.durable}: could not give back #${delivery.seq} (${errorMessage(error)})`);
      }
    }
  }
}

/**
 * One consume() call: a loop that takes one due delivery at a time and handles it before the
 * next. Instances of the same durable (in this process or another one on the same file) share
 * the work through the store's leases; the lanes of one process claim together (SharedClaims).
 * Idle, it sleeps until woken by a publish in this process, a claim made for it, another
 * process's write to the file (see InProcessBus's poll), or the durable's next scheduled retry.
 */
class InProcessConsumer implements Consumer {
  private stopping = false;
  private endSleep: (() => void) | undefined;
  private readonly loop: Promise<void>;

  constructor(
    private readonly store: SqliteBusStore,
    private readonly settings: InProcessConsumerSettings,
    private readonly claims: SharedClaims,
    private readonly handler: MessageHandler,
    private readonly logger: BusLogger,
    private readonly onStopped: () => void,
    private readonly onSettled: () => void,
  ) {
    claims.lanes.add(this);
    this.loop = this.run();
  }

  get filter(): string {
    return this.settings.filter;
  }

  get durable(): string {
    return this.settings.durable;
  }

  /** Asleep, waiting for a message (not handling one, not claiming). */
  get idle(): boolean {
    return this.endSleep !== undefined;
  }

  wake(): void {
    this.endSleep?.();
  }

  /** Stops claiming and resolves once the delivery being handled (if any) is settled. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
    this.claims.leave(this);
    this.onStopped();
  }

  private async run(): Promise<void> {
    const { durable } = this.settings;
    while (!this.stopping) {
      let claimed: ClaimedDelivery | undefined;
      try {
        claimed = this.claims.take(this);
      } catch (error) {
        // E.g. SQLITE_BUSY past the busy timeout while another process holds the file: try again later.
        this.logger.warn(`consumer ${durable} cannot claim (${errorMessage(error)}), retrying`);
      }
      if (claimed) {
        await this.handle(claimed);
        this.onSettled();
        // Let timers and I/O run between messages even when handlers resolve synchronously.
        await new Promise((resolve) => setImmediate(resolve));
      } else {
        await this.sleep();
      }
    }
  }

  private async handle(delivery: ClaimedDelivery): Promise<void> {
    const { durable, ackWaitMs, maxHandlingMs } = this.settings;
    let outcome: HandlerOutcome;
    const stopKeeping = keepWhileHandling(ackWaitMs, maxHandlingMs, () => this.renewLease(delivery));
    try {
      outcome = await this.handler({
        subject: delivery.subject,
        data: decodePayload(delivery.data),
        headers: { ...delivery.headers },
        deliveryCount: delivery.deliveryCount,
      });
    } catch (error) {
      stopKeeping();
      if (delivery.deliveryCount >= this.settings.maxDeliver) {
        this.park(delivery, failureReason(error));
        return;
      }
      const delayMs = backoffAfterFailureMs(delivery.deliveryCount);
      this.logger.warn(
        `consumer ${durable}: handler failed on ${delivery.subject} #${delivery.seq} (delivery ${delivery.deliveryCount}): ${errorMessage(error)}; retry in ${delayMs} ms`,
      );
      this.store.retryAt(durable, delivery, Date.now() + delayMs);
      return;
    }
    stopKeeping();
    if (!outcome) await this.ack(delivery);
    else if (delivery.deliveryCount >= this.settings.maxDeliver) this.park(delivery, RETRY_ON_LAST_DELIVERY);
    else this.store.retryAt(durable, delivery, Date.now() + outcome.retryInMs);
  }

  private async ack(delivery: ClaimedDelivery): Promise<void> {
    try {
      await this.store.ack(this.settings.durable, delivery.seq);
    } catch (error) {
      // E.g. SQLITE_BUSY past the busy timeout: the lease runs out and the message comes again.
      this.logger.warn(`consumer ${this.settings.durable}: could not ack #${delivery.seq} (${errorMessage(error)}); it will be delivered again`);
    }
  }

  private renewLease(delivery: ClaimedDelivery): void {
    try {
      this.store.renewLease(this.settings.durable, delivery, Date.now() + this.settings.ackWaitMs);
    } catch (error) {
      // SQLITE_BUSY past the busy timeout: the next renewal tries again, a third of the ack wait later.
      this.logger.warn(`consumer ${this.settings.durable}: could not renew the lease of #${delivery.seq} (${errorMessage(error)})`);
    }
  }

  /** The last allowed delivery failed: park it, where listParked shows it and replayParked can deliver it again. */
  private park(delivery: ClaimedDelivery, reason: string): void {
    const { durable } = this.settings;
    // False when its lease had run out and a claim parked it (or delivered it again) meanwhile: that one decided.
    if (!this.store.park(durable, delivery, reason)) return;
    this.logger.error(
      `consumer ${durable}: ${delivery.subject} #${delivery.seq} parked (id ${durable}:${delivery.seq}) after ${delivery.deliveryCount} deliveries (maxDeliver): ${reason}`,
    );
  }

  private sleep(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    const nextDueAt = this.store.nextDueAt(this.settings.durable);
    const ms = nextDueAt === undefined ? Infinity : Math.max(nextDueAt - Date.now(), 0);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.endSleep = undefined;
        resolve();
      };
      const timer = ms === Infinity ? undefined : setTimeout(done, ms);
      this.endSleep = done;
    });
  }
}
