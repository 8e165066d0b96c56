import {
  AckPolicy,
  connect,
  ConsumerMessages,
  Consumer as JetStreamConsumer,
  ConsumerConfig,
  ConsumerInfo,
  DeliverPolicy,
  ErrorCode,
  Events,
  headers as natsHeaders,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
  Msg,
  MsgHdrs,
  nanos,
  NatsConnection,
  NatsError,
  SeqMsgRequest,
  StorageType,
  StoredMsg,
  Subscription,
} from 'nats';
import {
  Bus,
  BusHeaders,
  BusRemoteError,
  BusTimeoutError,
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
} from './bus.port';
import { BusLogger, consoleBusLogger } from './bus-logger';
import { decodePayload, encodePayload, errorMessage } from './payload';
import { failureReason, NOT_ACKED_ON_LAST_DELIVERY, parkedQuery, RETRY_ON_LAST_DELIVERY } from './parking';
import { backoffAfterFailureMs, keepWhileHandling } from './redelivery';
import { assertConsumerSubject, assertDurableName, assertPublishSubject } from './subjects';
import { DEFAULT_STREAM_NAME, inboxPrefixOf, PARKED_STREAM_SUFFIX, PARKED_SUBJECT_ROOT } from './nats-permissions';

export interface NatsBusOptions {
  /** One URL or several separated by commas. */
  servers: string;
  /** Connection name, shown by the server's monitoring. */
  name: string;
  /**
   * JetStream stream holding `evt.>`. Default `CAMPAIGN_OPS_EVENTS`. Parked messages live in a
   * second stream, `<streamName>_PARKED`, bound to `parked.>`: one stream name per NATS account.
   */
  streamName?: string;
  /** Window in which a repeated `msgId` is dropped. Default 2 minutes. */
  duplicateWindowMs?: number;
  /**
   * Replicas of both streams (`num_replicas`): 1 on a single server, 3 (or 5) on a cluster so a
   * node can be lost. An existing stream is updated to it. Default 1.
   */
  streamReplicas?: number;
  /**
   * How long the events stream keeps a message (`max_age`), acked or not. Default 7 days. An
   * existing stream is updated to it (messages already older go at once). Must exceed the
   * de-duplication window.
   */
  streamMaxAgeMs?: number;
  /**
   * How long the parked stream keeps a parked message (`max_age`): the time operators have to list
   * and replay it. Default 30 days. Must exceed the de-duplication window.
   */
  parkedMaxAgeMs?: number;
  /**
   * The service's NATS user and password, when the server requires them (k8s/datastores/nats-auth.conf).
   * Replies to this connection's requests then come to `_INBOX.<user>.>`, the only inbox its user
   * may read.
   */
  credentials?: { user: string; password: string };
  /** PEM file of the CA that signed the server's certificate, for `tls://` servers with a private CA. */
  tlsCaFile?: string;
  /**
   * Create the streams when missing and bring them to these settings (default). False: only check
   * they exist, for users not allowed to change them (the services, when an operator's
   * `ops bus setup` owns the streams): a missing stream fails the connect, naming that command.
   */
  manageStreams?: boolean;
  logger?: BusLogger;
}

const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
const DEFAULT_STREAM_REPLICAS = 1;
// Retention of the events stream. Limits retention keeps a message until it is this old, acked or
// not; without a limit (max_age 0) the stream only grows. 7 days is safe because:
// - the stream is a transport, not a record: the event store is the source of truth, and every
//   message on `evt.>` is a copy of an event in it;
// - the relay (event store → bus) follows the event store from its own checkpoint, never reads the
//   stream back, and republishes from that checkpoint after any restart or outage: expiring old
//   messages takes nothing from it;
// - consumers ack within minutes (ack wait, a few retries with backoff, then parking into the
//   parked stream, which has its own, longer retention).
// A message still unacked after 7 days means a consumer down for a week; the events it missed are
// still in the event store.
const DEFAULT_STREAM_MAX_AGE_MS = 7 * 24 * 60 * 60_000;
// Parked messages wait for an operator (listParked, replayParked): a month to notice and act.
const DEFAULT_PARKED_MAX_AGE_MS = 30 * 24 * 60 * 60_000;
const RECONNECT_WAIT_MS = 1000;
const PING_TIMEOUT_MS = 2000;
// A pull request waits this long on the server for a message; the loop then simply asks again.
const FETCH_EXPIRES_MS = 5000;
// Pause after a failed fetch (server down, JetStream recovering) before asking again.
const FETCH_RETRY_PAUSE_MS = 500;
// How long an ack waits for the server's confirmation. An ack lost with a crashing server is never
// confirmed; waiting longer would only hold up the next message (the ack itself was sent already).
const ACK_CONFIRM_TIMEOUT_MS = 2000;
const JS_ERR_STREAM_NOT_FOUND = 10059;
const JS_ERR_CONSUMER_NOT_FOUND = 10014;
// A create for a durable that exists: "consumer name already in use" (older servers) and
// "consumer already exists" (2.10+, nats.js's `action: "create"` with other settings).
const JS_ERR_CONSUMER_NAME_EXISTS = 10013;
const JS_ERR_CONSUMER_ALREADY_EXISTS = 10148;
// An update for a durable deleted in between (2.10+, `action: "update"`).
const JS_ERR_CONSUMER_DOES_NOT_EXIST = 10149;
// How long a consumer waits for the durable's current settings (asked when a handler fails)
// before deciding with the last ones it knows.
const SETTINGS_REFRESH_TIMEOUT_MS = 1000;
const JS_ERR_NO_MESSAGE_FOUND = 10037;

// Headers of a parked message (beside those it was published with): where it came from and why it stopped.
const PARKED_SUBJECT_HEADER = 'Campaign-Ops-Parked-Subject';
const PARKED_DURABLE_HEADER = 'Campaign-Ops-Parked-Durable';
const PARKED_DELIVERY_COUNT_HEADER = 'Campaign-Ops-Parked-Delivery-Count';
const PARKED_REASON_HEADER = 'Campaign-Ops-Parked-Reason';
const PARKED_AT_HEADER = 'Campaign-Ops-Parked-At';
// On a replayed message: the only durable that handles it (see NatsConsumer.handle).
const REPLAY_FOR_HEADER = 'Campaign-Ops-Replay-For';
const INTERNAL_HEADERS = new Set(
  [PARKED_SUBJECT_HEADER, PARKED_DURABLE_HEADER, PARKED_DELIVERY_COUNT_HEADER, PARKED_REASON_HEADER, PARKED_AT_HEADER, REPLAY_FOR_HEADER].map(
    (name) => name.toLowerCase(),
  ),
);

/** A message to park: the original's stream sequence, subject, payload and headers. */
interface ToPark {
  durable: string;
  streamSeq: number;
  subject: string;
  data: Uint8Array;
  headers: MsgHdrs | undefined;
  deliveryCount: number;
  reason: string;
}

/** What JetStream publishes on `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`. */
interface MaxDeliveriesAdvisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

type MessageHandler = (message: DeliveredMessage<unknown>) => Promise<HandlerOutcome>;

/** What a responder sends back: the handler's result, or its error message (never a stack). */
type ReplyEnvelope<T> = { ok: true; data: T } | { ok: false; message: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

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
  ) {
    this.parkedStreamName = `${streamName}${PARKED_STREAM_SUFFIX}`;
    void this.watchConnection();
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
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
      ...(options.credentials ? { user: options.credentials.user, pass: options.credentials.password, inboxPrefix: inboxPrefixOf(options.credentials.user) } : {}),
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
      return new NatsBus(nc, nc.jetstream(), jsm, streamName, options.logger ?? consoleBusLogger);
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

  async respond<Req = unknown, Res = unknown>(
    subject: string,
    handler: (data: Req, context: RequestContext) => Promise<Res>,
  ): Promise<void> {
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
    try {
      const info = await this.jsm.consumers.info(this.streamName, durable);
      return info.num_pending + info.num_ack_pending;
    } catch {
      return 0; // not created yet
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
    for (let seq = 1; parked.length < limit; ) {
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
        if (!this.closed) this.logger.warn(`disconnected from NATS (${String(status.data)}), reconnecting`);
      } else if (status.type === Events.Reconnect) {
        this.connected = true;
        this.logger.warn(`reconnected to NATS (${String(status.data)})`);
      }
    }
  }
}

type Parker = (message: ToPark) => Promise<void>;

interface ConsumerSettings {
  durable: string;
  subject: string;
  ackWaitMs: number;
  maxDeliver: number;
}

/**
 * One consume() call: a loop that pulls one message at a time and handles it before pulling the
 * next. Pulling only when idle keeps per-instance ordering simple and lets instances sharing a
 * durable split the work; nothing waits in a local buffer while its ack timer runs.
 */
class NatsConsumer implements Consumer {
  private stopping = false;
  private fetch: ConsumerMessages | undefined;
  private endPause: (() => void) | undefined;
  private readonly loop: Promise<void>;

  /**
   * The durable's maxDeliver as the server has it, which decides the last delivery. It is this
   * instance's own unless another version of the app (a rolling upgrade, a rollback) has set its
   * own since: JetStream then gives up after that many deliveries and its max-deliveries advisory
   * says so, and the handler path must park on the same delivery, recording the same count.
   */
  private durableMaxDeliver: number;

  constructor(
    private readonly jsConsumer: JetStreamConsumer,
    private readonly settings: ConsumerSettings,
    /** Not a setting of the durable (JetStream knows nothing of it): this instance keeps its deliveries this long at most. */
    private readonly maxHandlingMs: number | undefined,
    durableMaxDeliver: number,
    private readonly handler: MessageHandler,
    private readonly park: Parker,
    private readonly logger: BusLogger,
    private readonly onStopped: () => void,
  ) {
    this.durableMaxDeliver = durableMaxDeliver;
    this.loop = this.run();
  }

  /**
   * Stops pulling and resolves once the message being handled (if any) is settled.
   * JetStream cannot cancel a pull request: a message the server sends at the very moment the pull
   * is closed is dropped by the client, and redelivered after ackWait like any unacked message.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.endPause?.();
    await this.fetch?.close();
    await this.loop;
    this.onStopped();
  }

  private async run(): Promise<void> {
    let failing = false;
    while (!this.stopping) {
      try {
        this.fetch = await this.jsConsumer.fetch({ max_messages: 1, expires: FETCH_EXPIRES_MS });
        // stop() may have come while the fetch was being set up. Closing takes effect as the loop below
        // drains the iterator (awaiting it here would wait forever), which then ends without a message.
        if (this.stopping) void this.fetch.close();
        for await (const msg of this.fetch) await this.handle(msg);
        if (failing) this.logger.warn(`consumer ${this.settings.durable} is pulling again`);
        failing = false;
      } catch (error) {
        if (this.stopping) break;
        // Typically the server is restarting: the connection reconnects by itself, so keep asking.
        if (!failing) this.logger.warn(`consumer ${this.settings.durable} cannot pull (${errorMessage(error)}), retrying`);
        failing = true;
        await this.pause(FETCH_RETRY_PAUSE_MS);
      } finally {
        this.fetch = undefined;
      }
    }
  }

  private async handle(msg: JsMsg): Promise<void> {
    const { durable } = this.settings;
    const deliveryCount = msg.info.deliveryCount;
    // A replay is republished to its subject, so every durable matching it receives it: only the
    // durable that parked it handles it, the others let it pass.
    const replayFor = msg.headers?.get(REPLAY_FOR_HEADER);
    if (replayFor && replayFor !== durable) {
      await this.ack(msg);
      return;
    }
    let outcome: HandlerOutcome;
    // `+WPI`: JetStream restarts the delivery's ack wait, so only a process that died loses it within ackWait.
    const stopKeeping = keepWhileHandling(this.settings.ackWaitMs, this.maxHandlingMs, () => msg.working());
    try {
      outcome = await this.handler({
        subject: msg.subject,
        data: decodePayload(decoder.decode(msg.data)),
        headers: userHeaders(msg.headers),
        deliveryCount,
      });
    } catch (error) {
      stopKeeping();
      if (deliveryCount >= (await this.currentMaxDeliver())) {
        await this.parkInstead(msg, deliveryCount, failureReason(error));
        return;
      }
      const delayMs = backoffAfterFailureMs(deliveryCount);
      this.logger.warn(
        `consumer ${durable}: handler failed on ${msg.subject} #${msg.seq} (delivery ${deliveryCount}): ${errorMessage(error)}; retry in ${delayMs} ms`,
      );
      msg.nak(delayMs);
      return;
    }
    stopKeeping();
    if (!outcome) await this.ack(msg);
    else if (deliveryCount >= (await this.currentMaxDeliver())) await this.parkInstead(msg, deliveryCount, RETRY_ON_LAST_DELIVERY);
    else msg.nak(outcome.retryInMs);
  }

  /**
   * The durable's maxDeliver, asked of the server when a delivery failed (not on the hot path): the
   * last delivery is the one JetStream counts as last, whichever version of the app set it. If the
   * server does not answer in time, the last value known decides (it was right at start or at the
   * last failure; a stale one parks a delivery early or leaves it to the advisory, as before).
   */
  private async currentMaxDeliver(): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const info = await Promise.race([
        this.jsConsumer.info(false),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), SETTINGS_REFRESH_TIMEOUT_MS))),
      ]);
      const maxDeliver = info.config.max_deliver;
      if (maxDeliver !== undefined && maxDeliver > 0 && maxDeliver !== this.durableMaxDeliver) {
        this.logger.warn(
          `consumer ${this.settings.durable}: the durable's maxDeliver is now ${maxDeliver} (was ${this.durableMaxDeliver}; this instance asked for ${this.settings.maxDeliver}): another version of the app set it; parking follows the durable`,
        );
        this.durableMaxDeliver = maxDeliver;
      }
    } catch {
      // Keep the last known value.
    } finally {
      clearTimeout(timer);
    }
    return this.durableMaxDeliver;
  }

  private async ack(msg: JsMsg): Promise<void> {
    try {
      // Wait for the server to confirm, so a stop() right after cannot see the message again.
      await msg.ackAck({ timeout: ACK_CONFIRM_TIMEOUT_MS });
    } catch (error) {
      this.logger.warn(`consumer ${this.settings.durable}: ack of #${msg.seq} not confirmed (${errorMessage(error)}); it may be redelivered`);
    }
  }

  /** The last allowed delivery failed: copy it to the parked stream, then terminate it here. */
  private async parkInstead(msg: JsMsg, deliveryCount: number, reason: string): Promise<void> {
    const { durable } = this.settings;
    try {
      await this.park({ durable, streamSeq: msg.seq, subject: msg.subject, data: msg.data, headers: msg.headers, deliveryCount, reason });
    } catch (error) {
      // Not parked (server away?). A nak on the last delivery makes JetStream give up on it and send
      // the max-deliveries advisory, which parks it (see NatsBus.watchMaxDeliveries).
      this.logger.error(
        `consumer ${durable}: could not park ${msg.subject} #${msg.seq} (${errorMessage(error)}); left to JetStream's max-deliveries advisory`,
      );
      msg.nak();
      return;
    }
    // No reason given: nats-server 2.9 ignores a `+TERM <reason>` altogether (the message then stays
    // pending until its ack wait ends); the reason is on the parked copy anyway.
    msg.term();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.endPause = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.endPause = done;
    });
  }
}

export interface StreamSettings {
  name: string;
  subjects: string[];
  duplicateWindowMs: number;
  replicas: number;
  /** `max_age`: messages older than this are removed, acked or not. */
  maxAgeMs: number;
}

/** A positive whole number of ms above the de-duplication window (the server refuses a smaller `max_age`). */
function assertMaxAge(option: string, maxAgeMs: number, duplicateWindowMs: number): number {
  if (!Number.isInteger(maxAgeMs) || maxAgeMs <= 0) throw new Error(`${option} must be a positive whole number of ms, got: ${maxAgeMs}`);
  if (maxAgeMs < duplicateWindowMs) throw new Error(`${option} (${maxAgeMs} ms) must not be shorter than duplicateWindowMs (${duplicateWindowMs} ms)`);
  return maxAgeMs;
}

/**
 * Creates the stream if it is missing, or brings an existing one to these settings (exported for its
 * spec). Not `manage`: only checks that it exists (its settings are the operator's).
 */
export async function ensureStream(jsm: JetStreamManager, settings: StreamSettings, manage = true, lostRace = false): Promise<void> {
  const { name, subjects, duplicateWindowMs, replicas, maxAgeMs } = settings;
  const duplicateWindow = nanos(duplicateWindowMs);
  const maxAge = nanos(maxAgeMs);
  const infoOf = () =>
    jsm.streams.info(name).catch((error: unknown) => {
      if (jsErrorCode(error) === JS_ERR_STREAM_NOT_FOUND) return undefined;
      throw error;
    });
  const existing = await infoOf();
  if (!manage) {
    if (!existing) throw new Error(`JetStream stream ${name} does not exist: an operator creates it with \`ops bus setup\` (the nats-streams Job)`);
    return;
  }
  try {
    if (!existing) {
      // Two services starting together both land here. Adding an identical stream is idempotent,
      // but the server may refuse the one that comes second ("subjects overlap with an existing
      // stream", seen with three at once): then the stream is there, and is checked as any other.
      await jsm.streams.add({ name, subjects, storage: StorageType.File, duplicate_window: duplicateWindow, num_replicas: replicas, max_age: maxAge });
    } else if (
      existing.config.duplicate_window !== duplicateWindow ||
      existing.config.subjects.join() !== subjects.join() ||
      existing.config.num_replicas !== replicas ||
      existing.config.max_age !== maxAge
    ) {
      // A stream created before retention was set (max_age 0, no limit) gets it here.
      await jsm.streams.update(name, { subjects, duplicate_window: duplicateWindow, num_replicas: replicas, max_age: maxAge });
    }
  } catch (error) {
    if (!existing && !lostRace && (await infoOf())) return ensureStream(jsm, settings, manage, true);
    // E.g. "replicas > 1 not supported in non-clustered mode": say which stream and setting.
    throw new Error(
      `cannot ${existing ? 'update' : 'create'} JetStream stream ${name} (${replicas} replica(s), max age ${maxAgeMs} ms, subjects ${subjects.join(', ')}): ${errorMessage(error)}`,
    );
  }
}

/**
 * Creates the durable if it is missing, or brings an existing one to these settings: idempotent, and
 * safe while two versions of an app roll out with different settings on one durable.
 *
 * - nats.js creates with `action: "create"`, which nats-server 2.10+ refuses ("consumer already
 *   exists") when the durable exists with other settings, e.g. when two instances of different
 *   versions both found it missing. So a create is only sent for a missing durable, and a refusal
 *   because it exists by now goes round again: read it, compare, update.
 * - ackWaitMs and maxDeliver are mutable: an update (`action: "update"`) sets them in place, keeping
 *   the durable's position and pending messages, with a warning naming the old and new values. The
 *   durable has one set of settings: while two versions run, the last instance to start sets them
 *   (the warning shows the flip-flop); instances of the other version follow the durable's
 *   maxDeliver when deciding a last delivery (NatsConsumer.currentMaxDeliver). Lowering maxDeliver
 *   below the deliveries a waiting message already had makes nats-server drop it without an
 *   advisory (it only advises on exactly maxDeliver + 1): lower it only when nothing is failing.
 * - The filter subject (and the ack policy) define what the durable is: an error naming the durable
 *   and both values, and the consumer does not start (the app fails its start; the old version keeps
 *   running). nats-server 2.10+ could update the filter in place, and deleting and recreating would
 *   always work, but neither is safe during a rollout: both versions pull from one durable, so the
 *   instances of the version whose filter was replaced would get messages they were not written for
 *   (and ack them, taking them from the other version) or miss theirs, and every restart of either
 *   version would flip the filter again; recreating also loses the position (DeliverPolicy.All
 *   delivers the whole stream again). A new filter is a new durable name: deploy it under a new
 *   name, and delete the old durable once the old version is gone.
 */
async function ensureDurableConsumer(jsm: JetStreamManager, stream: string, settings: ConsumerSettings, logger: BusLogger): Promise<ConsumerInfo> {
  const ackWait = nanos(settings.ackWaitMs);
  for (let attempt = 1; ; attempt++) {
    const existing = await jsm.consumers.info(stream, settings.durable).catch((error: unknown) => {
      if (jsErrorCode(error) === JS_ERR_CONSUMER_NOT_FOUND) return undefined;
      throw error;
    });
    const lastAttempt = attempt >= 3;
    if (!existing) {
      try {
        // Identical instances starting together both land here; an identical create is idempotent.
        return await jsm.consumers.add(stream, {
          durable_name: settings.durable,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: settings.subject,
          ack_wait: ackWait,
          max_deliver: settings.maxDeliver,
        });
      } catch (error) {
        const code = jsErrorCode(error);
        if (!lastAttempt && (code === JS_ERR_CONSUMER_ALREADY_EXISTS || code === JS_ERR_CONSUMER_NAME_EXISTS)) continue;
        throw error;
      }
    }
    const mismatch = identityMismatch(existing.config, settings);
    if (mismatch) {
      const message =
        `durable consumer ${settings.durable} on stream ${stream} exists with ${mismatch}: refusing to start it. ` +
        'Another version of the app uses this durable name for other messages; give the new one a new durable name ' +
        `(and delete ${settings.durable} once no version uses it: nats consumer rm ${stream} ${settings.durable})`;
      logger.error(message);
      throw new Error(message);
    }
    const changes: string[] = [];
    if (existing.config.ack_wait !== ackWait) changes.push(`ackWaitMs ${Math.round((existing.config.ack_wait ?? 0) / 1e6)} -> ${settings.ackWaitMs}`);
    if (existing.config.max_deliver !== settings.maxDeliver) changes.push(`maxDeliver ${existing.config.max_deliver} -> ${settings.maxDeliver}`);
    if (changes.length === 0) return existing;
    try {
      const updated = await jsm.consumers.update(stream, settings.durable, { ack_wait: ackWait, max_deliver: settings.maxDeliver });
      logger.warn(
        `consumer ${settings.durable}: updated the durable's settings in place (${changes.join(', ')}): ` +
          'its settings differed, set by another version of the app or an earlier configuration; instances still running with the old ones follow the durable',
      );
      return updated;
    } catch (error) {
      // Deleted in between (`action: "update"` on 2.10+): create it, next time round.
      const code = jsErrorCode(error);
      if (!lastAttempt && (code === JS_ERR_CONSUMER_DOES_NOT_EXIST || code === JS_ERR_CONSUMER_NOT_FOUND)) continue;
      throw error;
    }
  }
}

/** What makes an existing durable another durable than the one asked for, or undefined. */
function identityMismatch(config: ConsumerConfig, settings: ConsumerSettings): string | undefined {
  const filter = config.filter_subject ?? '';
  if (filter !== settings.subject) return `filter subject ${filter || '(none)'}, not ${settings.subject}`;
  if (config.ack_policy !== AckPolicy.Explicit) return `ack policy ${config.ack_policy}, not ${AckPolicy.Explicit}`;
  if (config.deliver_subject) return `a deliver subject (${config.deliver_subject}): a push consumer, not a pull one`;
  return undefined;
}

function jsErrorCode(error: unknown): number | undefined {
  return error instanceof NatsError ? error.api_error?.err_code : undefined;
}

function toBusError(subject: string, error: unknown): Error {
  if (!(error instanceof NatsError)) return error instanceof Error ? error : new Error(String(error));
  switch (error.code) {
    case ErrorCode.Timeout:
      return new BusTimeoutError(subject);
    case ErrorCode.NoResponders:
      return new BusUnavailableError(subject, 'no responders');
    case ErrorCode.ConnectionClosed:
    case ErrorCode.ConnectionDraining:
    case ErrorCode.Disconnect:
      return new BusUnavailableError(subject, error.message);
    default:
      return error;
  }
}

function toNatsHeaders(headers: BusHeaders | undefined): MsgHdrs | undefined {
  if (!headers || Object.keys(headers).length === 0) return undefined;
  const result = natsHeaders();
  for (const [name, value] of Object.entries(headers)) result.set(name, value);
  return result;
}

/**
 * The headers the message was published with. `Nats-*` headers (e.g. `Nats-Msg-Id`) belong to NATS,
 * and the parking and replay headers to this adapter: hidden like the in-process bus does.
 */
function userHeaders(headers: MsgHdrs | undefined): BusHeaders {
  const result: BusHeaders = {};
  for (const name of headers?.keys() ?? []) {
    const lower = name.toLowerCase();
    if (!lower.startsWith('nats-') && !INTERNAL_HEADERS.has(lower)) result[name] = headers!.get(name);
  }
  return result;
}

function toParkedMessage(stored: StoredMsg): ParkedMessage {
  const header = (name: string) => stored.header?.get(name) ?? '';
  return {
    id: String(stored.seq),
    // Also in the subject (`parked.<durable>`); the header is what parking wrote.
    durable: header(PARKED_DURABLE_HEADER) || stored.subject.slice(PARKED_SUBJECT_ROOT.length + 1),
    subject: header(PARKED_SUBJECT_HEADER),
    data: decodePayload(decoder.decode(stored.data)),
    headers: userHeaders(stored.header),
    deliveryCount: Number(header(PARKED_DELIVERY_COUNT_HEADER)) || 0,
    parkedAt: header(PARKED_AT_HEADER) || stored.time.toISOString(),
    reason: header(PARKED_REASON_HEADER),
  };
}
