// The bus on NATS: request/reply, publishing, consumers, parked messages and the connection.
// The consumer loop is in nats-consumer.ts, stream setup in nats-streams.ts, headers in nats-headers.ts.
import { connect, Events, headers as natsHeaders, JetStreamClient, JetStreamManager, Msg, NatsConnection, SeqMsgRequest, Subscription } from 'nats';
import {
  Bus,
  BusRemoteError,
  BusUnavailableError,
  Consumer,
  ConsumerOptions,
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_MAX_DELIVER,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DeliveredMessage,
  DURABLE_SUBJECT_ROOT,
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
import { makeHotPathErrorsCheap } from './nats-hot-path-errors';
import { batchSocketWritesPerTurn } from './nats-write-batching';
import { decodePayload, encodePayload, errorMessage } from './payload';
import { NOT_ACKED_ON_LAST_DELIVERY, parkedQuery } from './parking';
import { assertConsumerSubject, assertDurableName, assertPublishSubject } from './subjects';
import { DEFAULT_STREAM_NAME, inboxPrefixOf, PARKED_STREAM_SUFFIX, PARKED_SUBJECT_ROOT } from './nats-permissions';
import { DEFAULT_DUPLICATE_WINDOW_MS, DEFAULT_PARKED_MAX_AGE_MS, DEFAULT_STREAM_MAX_AGE_MS, DEFAULT_STREAM_REPLICAS, NatsBusOptions } from './nats-bus-options';
import { assertMaxAge, ensureStream } from './nats-streams';
import { ConsumerSettings, ensureDurableConsumer, MessageHandler, NatsConsumer } from './nats-consumer';
import {
  decoder,
  encoder,
  jsErrorCode,
  PARKED_AT_HEADER,
  PARKED_DELIVERY_COUNT_HEADER,
  PARKED_DURABLE_HEADER,
  PARKED_REASON_HEADER,
  PARKED_SUBJECT_HEADER,
  REPLAY_FOR_HEADER,
  toBusError,
  ToPark,
  toNatsHeaders,
  toParkedMessage,
  userHeaders,
} from './nats-headers';

export type { NatsBusOptions } from './nats-bus-options';
export { ensureStream } from './nats-streams';
export type { StreamSettings } from './nats-streams';

const RECONNECT_WAIT_MS = 1000;
const PING_TIMEOUT_MS = 2000;
const JS_ERR_NO_MESSAGE_FOUND = 10037;

/** What JetStream publishes on `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`. */
interface MaxDeliveriesAdvisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

/** What a responder sends back: the handler's result, or its error message (never a stack). */
type ReplyEnvelope<T> = { ok: true; data: T } | { ok: false; message: string };

/**
 * The bus on NATS: core request/reply with queue groups, and durable events on one JetStream
 * stream (`evt.>`) read through durable pull consumers. The connection reconnects forever, so
 * responders and consumers survive a nats-server restart.
 */
export class NatsBus implements Bus {
  private connected = true;
  private closed = false;
  private readonly responders: Subscription[] = [];
  private readonly repliesInFlight = new Set<Promise<void>>();
  private readonly consumers = new Set<NatsConsumer>();
  /** Durables whose max-deliveries advisories this connection handles (see watchMaxDeliveries). */
  private readonly advisorySubscriptions = new Map<string, Subscription>();
  private readonly parkingsInFlight = new Set<Promise<void>>();
  private readonly parkedStreamName: string;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly streamName: string,
    private readonly logger: BusLogger,
    /** Where replies and pulled messages come (`_INBOX.<user>` under per-app permissions; nats.js's own otherwise). */
    private readonly inboxPrefix: string | undefined,
  ) {
    this.parkedStreamName = `${streamName}${PARKED_STREAM_SUFFIX}`;
    void this.watchConnection();
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    makeHotPathErrorsCheap();
    batchSocketWritesPerTurn();
    const inboxPrefix = options.credentials ? inboxPrefixOf(options.credentials.user) : undefined;
    const nc = await connect({
      servers: options.servers.split(',').map((server) => server.trim()),
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: RECONNECT_WAIT_MS,
      // nats.js otherwise captures a stack trace for every request, JetStream publish, ack and
      // fetch (a context Error and a timeout Error made up front): about 6 % of dispatch-service's
      // CPU under load in a profile of `npm run bench -- --nats`. Our errors name the subject and
      // the operation themselves.
      noAsyncTraces: true,
      ...(options.credentials ? { user: options.credentials.user, pass: options.credentials.password, inboxPrefix } : {}),
      ...(options.tlsCaFile ? { tls: { caFile: options.tlsCaFile } } : {}),
    });
    try {
      const jsm = await nc.jetstreamManager();
      const streamName = options.streamName ?? DEFAULT_STREAM_NAME;
      const duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
      const replicas = options.streamReplicas ?? DEFAULT_STREAM_REPLICAS;
      if (!Number.isInteger(replicas) || replicas < 1) throw new Error(`streamReplicas must be a whole number of at least 1, got: ${replicas}`);
      const maxAgeMs = assertMaxAge('streamMaxAgeMs', options.streamMaxAgeMs ?? DEFAULT_STREAM_MAX_AGE_MS, duplicateWindowMs);
      const parkedMaxAgeMs = assertMaxAge('parkedMaxAgeMs', options.parkedMaxAgeMs ?? DEFAULT_PARKED_MAX_AGE_MS, duplicateWindowMs);
      const manage = options.manageStreams ?? true;
      await ensureStream(jsm, { name: streamName, subjects: [`${DURABLE_SUBJECT_ROOT}.>`], duplicateWindowMs, replicas, maxAgeMs }, manage);
      await ensureStream(
        jsm,
        {
          name: `${streamName}${PARKED_STREAM_SUFFIX}`,
          subjects: [`${PARKED_SUBJECT_ROOT}.>`],
          duplicateWindowMs,
          replicas,
          maxAgeMs: parkedMaxAgeMs,
        },
        manage,
      );
      return new NatsBus(nc, nc.jetstream(), jsm, streamName, options.logger ?? consoleBusLogger, inboxPrefix);
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  async request<Res = unknown, Req = unknown>(subject: string, data: Req, options: RequestOptions = {}): Promise<Res> {
    this.assertReachable(subject);
    let reply: Msg;
    try {
      reply = await this.nc.request(subject, encoder.encode(encodePayload(data)), {
        timeout: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
        headers: toNatsHeaders(options.headers),
      });
    } catch (error) {
      throw toBusError(subject, error);
    }
    const envelope = decodePayload<ReplyEnvelope<Res>>(decoder.decode(reply.data));
    if (!envelope.ok) throw new BusRemoteError(subject, envelope.message);
    return envelope.data;
  }

  async respond<Req = unknown, Res = unknown>(subject: string, handler: (data: Req, context: RequestContext) => Promise<Res>): Promise<void> {
    // The queue group is the subject itself: replicas of a service split its requests.
    const subscription = this.nc.subscribe(subject, {
      queue: subject,
      callback: (error, msg) => {
        if (error) {
          this.logger.error(`responder on ${subject} stopped: ${error.message}`);
          return;
        }
        const reply = this.answer(msg, handler).finally(() => this.repliesInFlight.delete(reply));
        this.repliesInFlight.add(reply);
      },
    });
    this.responders.push(subscription);
    // Resolve only once the server knows the subscription, so a request right after finds it.
    await this.nc.flush();
  }

  async publish<T>(subject: string, data: T, options: PublishOptions = {}): Promise<void> {
    assertPublishSubject(subject);
    this.assertReachable(subject);
    try {
      await this.js.publish(subject, encoder.encode(encodePayload(data)), {
        msgID: options.msgId,
        headers: toNatsHeaders(options.headers),
      });
    } catch (error) {
      throw toBusError(subject, error);
    }
  }

  async consume<T>(options: ConsumerOptions, handler: (message: DeliveredMessage<T>) => Promise<HandlerOutcome>): Promise<Consumer> {
    assertConsumerSubject(options.subject);
    assertDurableName(options.durable);
    const lanes = laneCount(options);
    this.assertReachable(options.subject);
    const settings: ConsumerSettings = {
      durable: options.durable,
      subject: options.subject,
      ackWaitMs: options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS,
      maxDeliver: options.maxDeliver ?? DEFAULT_MAX_DELIVER,
    };
    const maxHandlingMs = options.maxHandlingMs;
    const durableInfo = await ensureDurableConsumer(this.jsm, this.streamName, settings, this.logger);
    await this.watchMaxDeliveries(settings.durable);
    const jsConsumer = await this.js.consumers.get(this.streamName, settings.durable);
    const consumer = new NatsConsumer(
      jsConsumer,
      settings,
      maxHandlingMs,
      durableInfo.config.max_deliver ?? settings.maxDeliver,
      handler as MessageHandler,
      (message) => this.park(message),
      this.logger,
      () => this.consumers.delete(consumer),
      () => this.nc.flush(),
      { nc: this.nc, stream: this.streamName, inboxPrefix: this.inboxPrefix },
      lanes,
    );
    this.consumers.add(consumer);
    return consumer;
  }

  async ping(): Promise<void> {
    this.assertReachable('nats');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BusUnavailableError('nats', `no pong in ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.nc.rtt(), timeout]);
    } catch (error) {
      throw error instanceof BusUnavailableError ? error : toBusError('nats', error);
    } finally {
      clearTimeout(timer);
    }
  }

  async pending(durable: string): Promise<number> {
    return (await this.progress(durable)).pending;
  }

  /** From the consumer's info: its deliveries so far less those still waiting for their ack are the settled ones. */
  async progress(durable: string): Promise<ConsumerProgress> {
    try {
      const info = await this.jsm.consumers.info(this.streamName, durable);
      return { pending: info.num_pending + info.num_ack_pending, settled: Math.max(0, info.delivered.consumer_seq - info.num_ack_pending) };
    } catch {
      return { pending: 0, settled: 0 }; // not created yet
    }
  }

  /**
   * Reads the parked stream in order (oldest parking first) with one `STREAM.MSG.GET` per message,
   * each asking for the next message on `parked.<durable>` (or `parked.>`) from a sequence on
   * (`next_by_subj`, nats-server 2.9+): no consumer to create or clean up, gaps left by replays skipped.
   */
  async listParked(options?: ListParkedOptions): Promise<ParkedMessage[]> {
    const { durable, limit } = parkedQuery(options);
    this.assertReachable(this.parkedStreamName);
    const filter = `${PARKED_SUBJECT_ROOT}.${durable ?? '>'}`;
    const parked: ParkedMessage[] = [];
    for (let seq = 1; parked.length < limit;) {
      // `next_by_subj` is in the server's API but missing from nats.js's type of this request.
      const query: SeqMsgRequest & { next_by_subj: string } = { seq, next_by_subj: filter };
      const stored = await this.jsm.streams.getMessage(this.parkedStreamName, query).catch((error: unknown) => {
        if (jsErrorCode(error) === JS_ERR_NO_MESSAGE_FOUND) return undefined;
        throw toBusError(this.parkedStreamName, error);
      });
      if (!stored) break;
      parked.push(toParkedMessage(stored));
      seq = stored.seq + 1;
    }
    return parked;
  }

  /**
   * Republishes the parked message to its original subject, with a fresh msgId (the original's may
   * still be in the de-duplication window) and the `Campaign-Ops-Replay-For: <durable>` header, then
   * deletes it from the parked stream. Being a new message on the subject, it reaches every durable
   * whose filter matches, not just the one that parked it; NatsConsumer acks it unseen in those
   * others, so only the parking durable's handler runs it again (deliveryCount 1). Consumers that are
   * not NatsBus consumers would see the replay like any message.
   */
  async replayParked(id: string): Promise<void> {
    this.assertReachable(this.parkedStreamName);
    if (!/^[1-9]\d*$/.test(id)) throw new ParkedMessageNotFoundError(id);
    const seq = Number(id);
    const stored = await this.jsm.streams.getMessage(this.parkedStreamName, { seq }).catch((error: unknown) => {
      if (jsErrorCode(error) === JS_ERR_NO_MESSAGE_FOUND) throw new ParkedMessageNotFoundError(id);
      throw toBusError(this.parkedStreamName, error);
    });
    const parked = toParkedMessage(stored);
    if (!parked.subject) throw new Error(`parked message ${id} does not say which subject it came from (no ${PARKED_SUBJECT_HEADER} header)`);
    const headers = toNatsHeaders({ ...parked.headers, [REPLAY_FOR_HEADER]: parked.durable })!;
    try {
      // Deterministic, so replaying again after a failed delete (within the window) publishes once.
      await this.js.publish(parked.subject, stored.data, { msgID: `replay:${this.parkedStreamName}:${seq}:${parked.parkedAt}`, headers });
    } catch (error) {
      throw toBusError(parked.subject, error);
    }
    await this.jsm.streams.deleteMessage(this.parkedStreamName, seq, false).catch((error: unknown) => {
      // Someone replayed it at the same time: it is gone, which is what was asked.
      if (jsErrorCode(error) !== JS_ERR_NO_MESSAGE_FOUND) throw toBusError(this.parkedStreamName, error);
    });
  }

  /** Stops consumers and responders (waiting for handlers in flight), then drains the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
    if (!this.connected || this.nc.isClosed()) {
      // Draining needs the server; while it is away there is nothing to flush anyway.
      await this.nc.close();
      return;
    }
    // Stop taking requests and advisories first, so the replies and parkings still in flight can go out before the connection closes.
    const subscriptions = [...this.responders, ...this.advisorySubscriptions.values()];
    await Promise.all(subscriptions.map((subscription) => subscription.drain().catch(() => undefined)));
    await Promise.all([...this.repliesInFlight, ...this.parkingsInFlight]);
    await this.nc.drain().catch(() => this.nc.close());
  }

  /**
   * Copies the message to `parked.<durable>` with where it came from and why it stopped. The msgId
   * (durable + stream sequence) makes both ways of parking one message (the handler failing on the
   * last delivery, and the max-deliveries advisory) store it once, within the de-duplication window.
   */
  private async park(message: ToPark): Promise<void> {
    const parkedAt = new Date().toISOString();
    const headers = natsHeaders();
    for (const [name, value] of Object.entries(userHeaders(message.headers))) headers.set(name, value);
    headers.set(PARKED_SUBJECT_HEADER, message.subject);
    headers.set(PARKED_DURABLE_HEADER, message.durable);
    headers.set(PARKED_DELIVERY_COUNT_HEADER, String(message.deliveryCount));
    headers.set(PARKED_REASON_HEADER, message.reason);
    headers.set(PARKED_AT_HEADER, parkedAt);
    const ack = await this.js.publish(`${PARKED_SUBJECT_ROOT}.${message.durable}`, message.data, {
      msgID: `park:${this.streamName}:${message.durable}:${message.streamSeq}`,
      headers,
    });
    if (ack.duplicate) return; // parked already, by the other way
    this.logger.error(
      `consumer ${message.durable}: ${message.subject} #${message.streamSeq} parked (id ${ack.seq}) after ${message.deliveryCount} deliveries (maxDeliver): ${message.reason}`,
    );
  }

  /**
   * A handler that never settles its last allowed delivery leaves the message to JetStream, which
   * stops delivering it once its ack wait ends and announces so with a max-deliveries advisory (on
   * nats-server 2.9, when it next tries to deliver: while some instance of the durable is pulling).
   * The advisory names the stream sequence: the message is fetched from the stream and parked.
   *
   * Gap: advisories are core NATS messages, not stored. One sent while no instance of the durable is
   * connected (all down, or reconnecting) is lost, and the message is neither delivered nor parked:
   * it stays in the events stream (limits retention, until streamMaxAgeMs), but only an advisory captured elsewhere (a
   * stream on `$JS.EVENT.ADVISORY.>`, `nats event`) would tell its sequence. The failing path (throw
   * or retry on the last delivery) does not depend on advisories and never has this gap.
   * A hung handler that settles after this cannot change it: failing, it parks nothing more (same
   * msgId, within the de-duplication window; a second copy after it); succeeding, its ack comes too
   * late for JetStream and the parked copy stays (a replay is harmless to an idempotent handler;
   * in-process the late ack unparks it).
   * Instances of a durable share the advisories through a queue group, so one of them parks.
   */
  private async watchMaxDeliveries(durable: string): Promise<void> {
    if (this.advisorySubscriptions.has(durable)) return;
    const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${this.streamName}.${durable}`;
    const subscription = this.nc.subscribe(subject, {
      queue: 'campaign-ops-parking',
      callback: (error, msg) => {
        if (error) {
          this.logger.error(`max-deliveries advisories of ${durable} stopped: ${error.message}`);
          return;
        }
        const parking = this.parkAfterAdvisory(msg).finally(() => this.parkingsInFlight.delete(parking));
        this.parkingsInFlight.add(parking);
      },
    });
    this.advisorySubscriptions.set(durable, subscription);
    await this.nc.flush();
  }

  private async parkAfterAdvisory(msg: Msg): Promise<void> {
    let advisory: MaxDeliveriesAdvisory | undefined;
    try {
      advisory = JSON.parse(decoder.decode(msg.data)) as MaxDeliveriesAdvisory;
      const stored = await this.jsm.streams.getMessage(this.streamName, { seq: advisory.stream_seq });
      await this.park({
        durable: advisory.consumer,
        streamSeq: advisory.stream_seq,
        subject: stored.subject,
        data: stored.data,
        headers: stored.header,
        deliveryCount: advisory.deliveries,
        reason: NOT_ACKED_ON_LAST_DELIVERY,
      });
    } catch (error) {
      const which = advisory ? `${advisory.consumer} #${advisory.stream_seq}` : msg.subject;
      this.logger.error(`could not park ${which} after its max-deliveries advisory, it is neither delivered nor parked: ${errorMessage(error)}`);
    }
  }

  private async answer<Req, Res>(msg: Msg, handler: (data: Req, context: RequestContext) => Promise<Res>): Promise<void> {
    let reply: string;
    try {
      const data = await handler(decodePayload<Req>(decoder.decode(msg.data)), { subject: msg.subject, headers: userHeaders(msg.headers) });
      reply = encodePayload({ ok: true, data } satisfies ReplyEnvelope<Res>);
    } catch (error) {
      reply = encodePayload({ ok: false, message: errorMessage(error) } satisfies ReplyEnvelope<Res>);
    }
    try {
      msg.respond(encoder.encode(reply));
    } catch (error) {
      // The requester times out on its side; nothing else can be done with the reply.
      this.logger.warn(`could not reply on ${msg.subject}: ${errorMessage(error)}`);
    }
  }

  /** Fail fast instead of letting a request sit in the reconnect buffer until it times out. */
  private assertReachable(subject: string): void {
    if (this.closed || this.nc.isClosed()) throw new BusUnavailableError(subject, 'bus closed');
    if (!this.connected) throw new BusUnavailableError(subject, 'disconnected from NATS, reconnecting');
  }

  private async watchConnection(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === Events.Disconnect) {
        this.connected = false;
        for (const consumer of this.consumers) consumer.connectionChanged(false);
        if (!this.closed) this.logger.warn(`disconnected from NATS (${String(status.data)}), reconnecting`);
      } else if (status.type === Events.Reconnect) {
        this.connected = true;
        for (const consumer of this.consumers) consumer.connectionChanged(true);
        this.logger.warn(`reconnected to NATS (${String(status.data)})`);
      }
    }
  }
}
