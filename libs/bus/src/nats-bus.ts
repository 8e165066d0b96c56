import {
  AckPolicy,
  connect,
  ConsumerMessages,
  Consumer as JetStreamConsumer,
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
  StorageType,
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
  PublishOptions,
  RequestContext,
  RequestOptions,
} from './bus.port';
import { BusLogger, consoleBusLogger } from './bus-logger';
import { decodePayload, encodePayload, errorMessage } from './payload';
import { backoffAfterFailureMs } from './redelivery';
import { assertConsumerSubject, assertDurableName, assertPublishSubject } from './subjects';

export interface NatsBusOptions {
  /** One URL or several separated by commas. */
  servers: string;
  /** Connection name, shown by the server's monitoring. */
  name: string;
  /** JetStream stream holding `evt.>`. Default `CAMPAIGN_OPS_EVENTS`. */
  streamName?: string;
  /** Window in which a repeated `msgId` is dropped. Default 2 minutes. */
  duplicateWindowMs?: number;
  logger?: BusLogger;
}

const DEFAULT_STREAM_NAME = 'CAMPAIGN_OPS_EVENTS';
const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
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

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly streamName: string,
    private readonly logger: BusLogger,
  ) {
    void this.watchConnection();
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    const nc = await connect({
      servers: options.servers.split(',').map((server) => server.trim()),
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: RECONNECT_WAIT_MS,
    });
    try {
      const jsm = await nc.jetstreamManager();
      const streamName = options.streamName ?? DEFAULT_STREAM_NAME;
      await ensureStream(jsm, streamName, options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS);
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
    await ensureDurableConsumer(this.jsm, this.streamName, settings);
    const jsConsumer = await this.js.consumers.get(this.streamName, settings.durable);
    const consumer = new NatsConsumer(jsConsumer, settings, handler as MessageHandler, this.logger, () => this.consumers.delete(consumer));
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
    // Stop taking requests first, so the replies still in flight can go out before the connection closes.
    await Promise.all(this.responders.map((subscription) => subscription.drain().catch(() => undefined)));
    await Promise.all(this.repliesInFlight);
    await this.nc.drain().catch(() => this.nc.close());
  }

  private async answer<Req, Res>(msg: Msg, handler: (data: Req, context: RequestContext) => Promise<Res>): Promise<void> {
    let reply: string;
    try {
      const data = await handler(decodePayload<Req>(decoder.decode(msg.data)), { subject: msg.subject, headers: fromNatsHeaders(msg.headers) });
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

  constructor(
    private readonly jsConsumer: JetStreamConsumer,
    private readonly settings: ConsumerSettings,
    private readonly handler: MessageHandler,
    private readonly logger: BusLogger,
    private readonly onStopped: () => void,
  ) {
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
    const deliveryCount = msg.info.deliveryCount;
    let outcome: HandlerOutcome;
    try {
      outcome = await this.handler({
        subject: msg.subject,
        data: decodePayload(decoder.decode(msg.data)),
        headers: fromNatsHeaders(msg.headers),
        deliveryCount,
      });
    } catch (error) {
      const delayMs = backoffAfterFailureMs(deliveryCount);
      this.logger.warn(
        `consumer ${this.settings.durable}: handler failed on ${msg.subject} #${msg.seq} (delivery ${deliveryCount}): ${errorMessage(error)}; retry in ${delayMs} ms`,
      );
      this.redeliverLater(msg, delayMs, deliveryCount);
      return;
    }
    if (outcome) {
      this.redeliverLater(msg, outcome.retryInMs, deliveryCount);
      return;
    }
    try {
      // Wait for the server to confirm, so a stop() right after cannot see the message again.
      await msg.ackAck({ timeout: ACK_CONFIRM_TIMEOUT_MS });
    } catch (error) {
      this.logger.warn(`consumer ${this.settings.durable}: ack of #${msg.seq} not confirmed (${errorMessage(error)}); it may be redelivered`);
    }
  }

  private redeliverLater(msg: JsMsg, delayMs: number, deliveryCount: number): void {
    if (deliveryCount >= this.settings.maxDeliver) {
      // JetStream itself stops redelivering past max_deliver; say so loudly, the message needs a human.
      this.logger.error(
        `consumer ${this.settings.durable}: ${msg.subject} #${msg.seq} failed ${deliveryCount} deliveries (maxDeliver); it will not be redelivered`,
      );
    }
    msg.nak(delayMs);
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

async function ensureStream(jsm: JetStreamManager, name: string, duplicateWindowMs: number): Promise<void> {
  const subjects = [`${DURABLE_SUBJECT_ROOT}.>`];
  const duplicateWindow = nanos(duplicateWindowMs);
  const existing = await jsm.streams.info(name).catch((error: unknown) => {
    if (jsErrorCode(error) === JS_ERR_STREAM_NOT_FOUND) return undefined;
    throw error;
  });
  if (!existing) {
    // Two services starting together both land here; adding an identical stream is idempotent.
    await jsm.streams.add({ name, subjects, storage: StorageType.File, duplicate_window: duplicateWindow });
  } else if (existing.config.duplicate_window !== duplicateWindow || existing.config.subjects.join() !== subjects.join()) {
    await jsm.streams.update(name, { subjects, duplicate_window: duplicateWindow });
  }
}

async function ensureDurableConsumer(jsm: JetStreamManager, stream: string, settings: ConsumerSettings): Promise<void> {
  const ackWait = nanos(settings.ackWaitMs);
  const existing = await jsm.consumers.info(stream, settings.durable).catch((error: unknown) => {
    if (jsErrorCode(error) === JS_ERR_CONSUMER_NOT_FOUND) return undefined;
    throw error;
  });
  if (!existing) {
    // Instances starting together both land here; adding an identical consumer is idempotent.
    await jsm.consumers.add(stream, {
      durable_name: settings.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: settings.subject,
      ack_wait: ackWait,
      max_deliver: settings.maxDeliver,
    });
  } else {
    const { filter_subject, ack_wait, max_deliver } = existing.config;
    if (filter_subject !== settings.subject || ack_wait !== ackWait || max_deliver !== settings.maxDeliver) {
      await jsm.consumers.update(stream, settings.durable, {
        filter_subject: settings.subject,
        ack_wait: ackWait,
        max_deliver: settings.maxDeliver,
      });
    }
  }
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

/** `Nats-*` headers (e.g. `Nats-Msg-Id`) belong to NATS, not to the message: hidden like the in-process bus does. */
function fromNatsHeaders(headers: MsgHdrs | undefined): BusHeaders {
  const result: BusHeaders = {};
  for (const name of headers?.keys() ?? []) {
    if (!name.toLowerCase().startsWith('nats-')) result[name] = headers!.get(name);
  }
  return result;
}
