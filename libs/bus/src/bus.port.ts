/**
 * The bus port: request/reply between services, and durable event streams with
 * consumers that ack, get redelivered, and retry later.
 * Adapters: NATS + JetStream (`nats-bus.ts`) and in-process (`in-process-bus.ts`, durable on SQLite).
 *
 * Subjects use NATS syntax: tokens separated by `.`, `*` matches one token, `>` the rest.
 * Durable subjects (publish/consume) live under `evt.>`; request subjects anywhere else.
 */
export const BUS = Symbol('BUS');

export const DURABLE_SUBJECT_ROOT = 'evt';

// The defaults documented below, shared by the adapters.
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;
export const DEFAULT_ACK_WAIT_MS = 30000;
export const DEFAULT_MAX_DELIVER = 100;
export const DEFAULT_PARKED_LIMIT = 100;

export interface BusHeaders {
  [name: string]: string;
}

export interface RequestOptions {
  /** Default 5000 ms. */
  timeoutMs?: number;
  headers?: BusHeaders;
}

export interface PublishOptions {
  /**
   * De-duplication id: a second publish with the same id is dropped (NATS `Nats-Msg-Id`) within the
   * de-duplication window. NATS: the stream's `duplicate_window`, 2 minutes by default. In-process:
   * as long as the message is stored, at least 24 hours; the periodic purge then deletes messages
   * every consumer is done with, and their ids with them, after which the same id is stored anew.
   * So de-duplication holds for 24 h in-process, 2 min on NATS: retries must come within that.
   */
  msgId?: string;
  headers?: BusHeaders;
}

export interface DeliveredMessage<T> {
  subject: string;
  data: T;
  headers: BusHeaders;
  /** 1 on first delivery. */
  deliveryCount: number;
}

/** Returned by a consumer's handler: nothing to ack, `{ retryInMs }` to be redelivered later. */
export type HandlerOutcome = void | { retryInMs: number };

export interface ConsumerOptions {
  /** Durable name: consumers with the same name share the work and resume where it stopped. */
  durable: string;
  /** Subject filter under `evt.>`, e.g. `evt.dispatch.>`. */
  subject: string;
  /** A message not acked within this is redelivered. Default 30000. */
  ackWaitMs?: number;
  /**
   * For handlers that may run longer than ackWaitMs (e.g. calls to an outside system with long
   * timeouts): while a handler runs, its delivery is kept (the lease renewed, JetStream told it is
   * in progress) every third of ackWaitMs, until about this long after the delivery. A process that
   * dies then loses its deliveries to another within ackWaitMs, not within the longest a handler
   * may take; a handler that hangs past this loses its delivery then, as any other.
   * Unset (or not above ackWaitMs): nothing is renewed.
   */
  maxHandlingMs?: number;
  /**
   * Deliveries before a message is parked. Default 100. A handler that fails (throws or asks for a
   * retry) on the last allowed delivery, or does not settle within ackWaitMs on it, gets the message
   * parked: it is no longer delivered, `listParked` shows it, and `replayParked` delivers it again.
   */
  maxDeliver?: number;
  /**
   * How many of its messages this consumer handles at once (default 1), each lane one at a time.
   * The adapter takes messages for every idle lane together (NATS: one pull request for all of
   * them; in-process: one claim) and never more than the idle lanes, so no message waits in a
   * local buffer while its ack wait runs.
   */
  lanes?: number;
}

/** A consumer's lanes (ConsumerOptions.lanes): a whole number, at least 1. */
export function laneCount(options: Pick<ConsumerOptions, 'lanes'>): number {
  const lanes = options.lanes ?? 1;
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`a consumer's lanes must be a whole number of at least 1, not ${lanes}`);
  return lanes;
}

/** A message a durable gave up on after maxDeliver deliveries, kept for an operator to see and replay. */
export interface ParkedMessage {
  /** What `replayParked` takes. Opaque: `<durable>:<seq>` in-process, the parked stream's sequence on NATS. */
  id: string;
  /** The durable consumer that parked it; a replay goes to this durable only. */
  durable: string;
  /** The subject it was published to. */
  subject: string;
  data: unknown;
  /** The headers it was published with. */
  headers: BusHeaders;
  /** Deliveries made before it was parked (maxDeliver, as configured when it was parked). */
  deliveryCount: number;
  /** ISO 8601. */
  parkedAt: string;
  /** The handler's error message on the last delivery, or why else it was parked. */
  reason: string;
}

export interface ListParkedOptions {
  /** Only what this durable parked. */
  durable?: string;
  /** At most this many, oldest first. Default 100. */
  limit?: number;
}

export interface ConsumerProgress {
  pending: number;
  settled: number;
}
export interface Consumer {
  stop(): Promise<void>;
}

export interface RequestContext {
  /** The concrete subject requested: what a wildcard responder (`rpc.accounts.*`) needs to know which one. */
  subject: string;
  headers: BusHeaders;
}

export interface Bus {
  /** Rejects with BusTimeoutError or BusUnavailableError (no responder / not connected). */
  request<Res = unknown, Req = unknown>(subject: string, data: Req, options?: RequestOptions): Promise<Res>;
  /** Replicas of one service share the requests of a subject (queue group). */
  respond<Req = unknown, Res = unknown>(subject: string, handler: (data: Req, context: RequestContext) => Promise<Res>): Promise<void>;
  /** Resolves once the message is stored durably. */
  publish<T>(subject: string, data: T, options?: PublishOptions): Promise<void>;
  /** A handler that throws is redelivered after a backoff. */
  consume<T>(options: ConsumerOptions, handler: (message: DeliveredMessage<T>) => Promise<HandlerOutcome>): Promise<Consumer>;
  /** Messages a durable consumer has not acked yet (queued or in flight): its lag, for /metrics. Parked messages are not pending. */
  pending(durable: string): Promise<number>;
  /**
   * A durable consumer's progress, for how long its backlog takes at its pace: `pending` as
   * pending() counts it, and `settled`, the deliveries it has settled so far (handled, failed and
   * retried later, or parked), a count that only grows while the bus is open. Its origin is the
   * adapter's (in-process: the consumers of this process since it opened the bus; NATS: the
   * consumer's deliveries since it was made): compare two readings, never one with zero.
   */
  progress(durable: string): Promise<ConsumerProgress>;
  /** Parked messages, oldest first. */
  listParked(options?: ListParkedOptions): Promise<ParkedMessage[]>;
  /**
   * Delivers a parked message again to the durable that parked it, its deliveryCount starting over
   * at 1, and removes it from the parked list. Rejects with ParkedMessageNotFoundError for an id
   * that is not (or no longer) parked.
   */
  replayParked(id: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export class BusTimeoutError extends Error {
  constructor(readonly subject: string) {
    super(`no reply on ${subject} in time`);
    this.name = 'BusTimeoutError';
  }
}

export class BusUnavailableError extends Error {
  constructor(
    readonly subject: string,
    reason: string,
  ) {
    super(`cannot reach ${subject}: ${reason}`);
    this.name = 'BusUnavailableError';
  }
}

export class ParkedMessageNotFoundError extends Error {
  constructor(readonly id: string) {
    super(`no parked message with id ${JSON.stringify(id)}`);
    this.name = 'ParkedMessageNotFoundError';
  }
}

/** The responder threw: its message, never its stack. */
export class BusRemoteError extends Error {
  constructor(
    readonly subject: string,
    message: string,
  ) {
    super(message);
    this.name = 'BusRemoteError';
  }
}
