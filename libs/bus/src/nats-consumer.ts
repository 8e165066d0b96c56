// A durable pull consumer on the events stream: the durable created or brought to its settings,
// and its lanes, which handle, ack, retry and park one message each at a time.
import { AckPolicy, Consumer as JetStreamConsumer, ConsumerConfig, ConsumerInfo, DeliverPolicy, JetStreamManager, JsMsg, NatsConnection, nanos } from 'nats';
import { Consumer, DeliveredMessage, HandlerOutcome } from './bus.port';
import { BusLogger } from './bus-logger';
import { decodePayload, errorMessage } from './payload';
import { failureReason, RETRY_ON_LAST_DELIVERY } from './parking';
import { backoffAfterFailureMs, keepWhileHandling } from './redelivery';
import { decoder, jsErrorCode, REPLAY_FOR_HEADER, ToPark, userHeaders } from './nats-headers';
import { LanePulls } from './nats-lane-pulls';

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

export type MessageHandler = (message: DeliveredMessage<unknown>) => Promise<HandlerOutcome>;

type Parker = (message: ToPark) => Promise<void>;

export interface ConsumerSettings {
  durable: string;
  subject: string;
  ackWaitMs: number;
  maxDeliver: number;
}

/**
 * One consume() call: its lanes, each handling a message and settling it (ack, nak with a delay,
 * park), and the pulls that fill them (LanePulls): as many messages as there are idle lanes,
 * asked for together at the end of a turn, never more. Pulling only for idle lanes lets instances
 * sharing a durable split the work, and nothing waits in a local buffer while its ack timer runs.
 */
export class NatsConsumer implements Consumer {
  private stopping = false;
  private readonly pulls: LanePulls;
  /** Lanes handling a message now, and their handlings. */
  private busy = 0;
  private readonly handlings = new Set<Promise<void>>();

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
    /** The connection's flush: resolves once the server has read everything sent before it. */
    private readonly flush: () => Promise<void>,
    pulling: { nc: NatsConnection; stream: string; inboxPrefix?: string },
    private readonly lanes = 1,
  ) {
    this.durableMaxDeliver = durableMaxDeliver;
    this.pulls = new LanePulls(pulling.nc, {
      nextSubject: `$JS.API.CONSUMER.MSG.NEXT.${pulling.stream}.${settings.durable}`,
      inboxPrefix: pulling.inboxPrefix,
      room: () => (this.stopping ? 0 : this.lanes - this.busy),
      deliver: (msg) => this.inLane(msg),
      // Typically the server is restarting or JetStream electing leaders: it keeps asking.
      refused: (why) => this.logger.warn(`consumer ${settings.durable} cannot pull (${why}), retrying`),
      recovered: () => this.logger.warn(`consumer ${settings.durable} is pulling again`),
    });
  }

  /** The connection went down, or came back (on a server that may not hold the pulls sent before). */
  connectionChanged(connected: boolean): void {
    if (connected) this.pulls.reconnected();
    else this.pulls.disconnected();
  }

  /** Stops pulling and resolves once the messages being handled (if any) are settled. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.pulls.stop();
    await Promise.all(this.handlings);
    // The acks sent are in the server's hands (a PING answered after them) before stop() resolves.
    await this.flush().catch(() => undefined);
    this.onStopped();
  }

  /** A lane handles the message; once it is settled, the lane is free for the next pull. */
  private inLane(msg: JsMsg): void {
    this.busy++;
    const handling = this.handle(msg)
      .catch((error: unknown) => this.logger.error(`consumer ${this.settings.durable}: handling #${msg.seq} failed: ${errorMessage(error)}`))
      .finally(() => {
        this.busy--;
        this.handlings.delete(handling);
        this.pulls.pullSoon();
      });
    this.handlings.add(handling);
  }

  private async handle(msg: JsMsg): Promise<void> {
    const { durable } = this.settings;
    const deliveryCount = msg.info.deliveryCount;
    // A replay is republished to its subject, so every durable matching it receives it: only the
    // durable that parked it handles it, the others let it pass.
    const replayFor = msg.headers?.get(REPLAY_FOR_HEADER);
    if (replayFor && replayFor !== durable) {
      this.ack(msg);
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
    if (!outcome) this.ack(msg);
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

  /**
   * Not confirmed one by one (a request and a reply per message): an ack lost with a server going
   * away means a redelivery, which every handler takes (delivery is at least once). stop() flushes
   * the connection once its handlings are settled, so the server has every ack it sent.
   */
  private ack(msg: JsMsg): void {
    msg.ack();
  }

  /** The last allowed delivery failed: copy it to the parked stream, then terminate it here. */
  private async parkInstead(msg: JsMsg, deliveryCount: number, reason: string): Promise<void> {
    const { durable } = this.settings;
    try {
      await this.park({ durable, streamSeq: msg.seq, subject: msg.subject, data: msg.data, headers: msg.headers, deliveryCount, reason });
    } catch (error) {
      // Not parked (server away?). A nak on the last delivery makes JetStream give up on it and send
      // the max-deliveries advisory, which parks it (see NatsBus.watchMaxDeliveries).
      this.logger.error(`consumer ${durable}: could not park ${msg.subject} #${msg.seq} (${errorMessage(error)}); left to JetStream's max-deliveries advisory`);
      msg.nak();
      return;
    }
    // No reason given: nats-server 2.9 ignores a `+TERM <reason>` altogether (the message then stays
    // pending until its ack wait ends); the reason is on the parked copy anyway.
    msg.term();
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
export async function ensureDurableConsumer(jsm: JetStreamManager, stream: string, settings: ConsumerSettings, logger: BusLogger): Promise<ConsumerInfo> {
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
export function identityMismatch(config: ConsumerConfig, settings: ConsumerSettings): string | undefined {
  const filter = config.filter_subject ?? '';
  if (filter !== settings.subject) return `filter subject ${filter || '(none)'}, not ${settings.subject}`;
  if (config.ack_policy !== AckPolicy.Explicit) return `ack policy ${config.ack_policy}, not ${AckPolicy.Explicit}`;
  if (config.deliver_subject) return `a deliver subject (${config.deliver_subject}): a push consumer, not a pull one`;
  return undefined;
}
