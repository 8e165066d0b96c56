// The pull requests of one durable consumer's lanes: one inbox for the consumer's life, and pull
// requests to it for as many messages as the lanes have room for, never more.
import { createInbox, JsMsg, Msg, NatsConnection, nanos, Subscription } from 'nats';
// nats.js makes a JsMsg (ack, nak, working, its delivery info) of a pulled message only inside
// its own consumers; the function it uses is not re-exported from the package's index (nats 2.29).
import { toJsMsg } from 'nats/lib/jetstream/jsmsg';

/** A pull request waits this long on the server for messages; then the server says how many it did not bring (408). */
export const PULL_EXPIRES_MS = 5000;
/** After a refused pull (no JetStream, the durable missing, the server away), how long before asking again. */
export const PULL_RETRY_PAUSE_MS = 500;
/**
 * A pull request the server lost (a restart, a leader moved) never says it is over. Once this
 * long has passed beyond the expiry of the last one sent, nothing sent can still be waiting on
 * the server: whatever is still counted as asked for is forgotten, and asked for again.
 */
const LOST_AFTER_MS = PULL_EXPIRES_MS + 2000;
const PENDING_MESSAGES_HEADER = 'Nats-Pending-Messages';
const STATUS_IDLE_HEARTBEAT = 100;
const STATUS_REQUEST_TIMEOUT = 408;
const STATUS_CONFLICT = 409;

export interface LanePullsOptions {
  /** `$JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>`. */
  nextSubject: string;
  /** The connection's inbox prefix (`_INBOX.<user>` under per-app permissions). */
  inboxPrefix?: string;
  /** How many more messages the lanes can take now (idle lanes). */
  room(): number;
  /** A pulled message, to a lane. */
  deliver(message: JsMsg): void;
  /** The server refused a pull, or answered none (said once until pulls work again). */
  refused(why: string): void;
  /** Pulls work again after a refusal. */
  recovered(): void;
}

/**
 * Asks JetStream for messages only for room the lanes have: the messages asked for and not yet
 * arrived count as taken, so a message waits on the bus, not in this process, while the lanes
 * are busy (and replicas sharing the durable split the work). The requests of one turn of the
 * event loop go as one, for all the room that turn freed. Unlike a nats.js fetch per batch, the
 * inbox is subscribed once: a batch costs one publish, not a subscription, a status watch and
 * timers. The count of what is asked for stays exact from the server's own answers: each message
 * takes one, and a request that expires says how many it did not bring (408 with
 * `Nats-Pending-Messages`); a request the server lost is forgotten once nothing sent can still be
 * waiting (LOST_AFTER_MS), and all of them at a reconnection. A message that arrives all the same
 * (a request forgotten too early) goes to a lane anyway: nothing pulled is ever dropped.
 */
export class LanePulls {
  private readonly inbox: string;
  private subscription: Subscription | null = null;
  /** Messages asked for that have neither arrived nor been given up by the server. */
  private asked = 0;
  private lastAskedAt = 0;
  private scheduled = false;
  private connected = true;
  private stopped = false;
  private refusing = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly watchdog: NodeJS.Timeout;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: LanePullsOptions,
  ) {
    this.inbox = createInbox(options.inboxPrefix);
    this.subscription = nc.subscribe(this.inbox, { callback: (error, msg) => (error ? this.refuse(error.message) : this.arrived(msg)) });
    this.watchdog = setInterval(() => this.forgetLost(), PULL_EXPIRES_MS);
    this.watchdog.unref();
    this.pullSoon();
  }

  /** Asks, at the end of this turn, for the room the lanes have then. */
  pullSoon(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pull();
    });
  }

  /** The connection is down: nothing is asked for until it is back (nats.js would buffer the request and send it late). */
  disconnected(): void {
    this.connected = false;
  }

  /** Back on a server, which may not hold the requests sent before: they are forgotten and asked for again. */
  reconnected(): void {
    this.connected = true;
    this.asked = 0;
    this.pullSoon();
  }

  /**
   * No more requests, and the inbox closed. JetStream cannot cancel a pull request: a message the
   * server sends after this is dropped by the client and redelivered after its ack wait, like
   * any unacked one.
   */
  stop(): void {
    this.stopped = true;
    clearInterval(this.watchdog);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.subscription?.unsubscribe();
    this.subscription = null;
  }

  private pull(): void {
    if (this.stopped || !this.connected || this.retryTimer) return;
    const batch = this.options.room() - this.asked;
    if (batch <= 0) return;
    try {
      this.nc.publish(this.options.nextSubject, JSON.stringify({ batch, expires: nanos(PULL_EXPIRES_MS) }), { reply: this.inbox });
    } catch (error) {
      this.refuse((error as Error).message);
      return;
    }
    this.asked += batch;
    this.lastAskedAt = performance.now();
  }

  private arrived(msg: Msg): void {
    if (this.stopped) return;
    if (msg.subject !== this.inbox) {
      this.asked = Math.max(0, this.asked - 1);
      this.working();
      this.options.deliver(toJsMsg(msg));
      return;
    }
    const code = msg.headers?.code ?? 0;
    if (code === STATUS_IDLE_HEARTBEAT) return;
    const notBrought = Number(msg.headers?.get(PENDING_MESSAGES_HEADER) || NaN);
    if ((code === STATUS_REQUEST_TIMEOUT || code === STATUS_CONFLICT) && Number.isInteger(notBrought) && notBrought >= 0) {
      // A request ended (expired, or cut short by the server) without bringing these: ask again.
      this.asked = Math.max(0, this.asked - notBrought);
      if (code === STATUS_REQUEST_TIMEOUT) this.working();
      this.pullSoon();
      return;
    }
    // Refused (no JetStream answering, the durable gone, a bad request) or an end we cannot count:
    // forget what was asked for and ask again after a pause.
    this.refuse(`${code} ${msg.headers?.description ?? 'no description'}`);
  }

  private refuse(why: string): void {
    this.asked = 0;
    if (!this.refusing) this.options.refused(why);
    this.refusing = true;
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.pull();
    }, PULL_RETRY_PAUSE_MS);
    this.retryTimer.unref();
  }

  private working(): void {
    if (!this.refusing) return;
    this.refusing = false;
    this.options.recovered();
  }

  private forgetLost(): void {
    if (this.asked === 0 || performance.now() - this.lastAskedAt < LOST_AFTER_MS) return;
    this.asked = 0;
    this.pullSoon();
  }
}
