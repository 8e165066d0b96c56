import { Inject, Injectable, Logger } from '@nestjs/common';
import { Collection } from '@campaign-ops/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { afterAttempt, AttemptResult, Delivery } from '@campaign-ops/webhook-domain';
import { signBody } from '@campaign-ops/webhook-signing';
import { WebhookPoster, WebhookSender } from '@campaign-ops/webhook-sender';
import { UrlPolicy } from '@campaign-ops/url-guard';
import { deliveryAttempts } from '@campaign-ops/service-runtime';
import { EndpointHealth } from './endpoint-health';
import { EndpointStore } from './endpoint-store';
import { DELIVERIES, DELIVERY_WORKER_OPTIONS } from './webhook-delivery.tokens';

/** A lease's time past the attempt's timeout: the hand-over to the sender and the outcome's write. */
const LEASE_MARGIN_MS = 5_000;

export interface DeliveryWorkerOptions {
  timeoutMs: number;
  retrySchedule: number[];
  policy: UrlPolicy;
  userAgent: string;
}

/**
 * Sends due deliveries. A delivery is claimed with a lease (its next attempt moved past the
 * timeout), so a worker that dies mid-send leaves it to be picked up again: at least once.
 */
@Injectable()
export class DeliveryWorker {
  private readonly logger = new Logger('webhook-delivery');

  constructor(
    @Inject(DELIVERIES) private readonly deliveries: Collection<Delivery>,
    private readonly endpoints: EndpointStore,
    private readonly secrets: SecretBox,
    private readonly health: EndpointHealth,
    @Inject(DELIVERY_WORKER_OPTIONS) private readonly options: DeliveryWorkerOptions,
    @Inject(WebhookSender) private readonly sender: WebhookPoster,
  ) {}

  /**
   * Makes deliveries claimed by a previous run due again. Only where this process is the only
   * worker (standalone): its leases at start can only belong to a run that died mid-send.
   */
  async releaseLeases(): Promise<number> {
    const now = new Date().toISOString();
    let released = 0;
    for (;;) {
      const claimed = await this.deliveries.claim({ status: 'pending', lease_until: { $gt: now } }, { next_attempt_at: now, lease_until: null });
      if (!claimed) return released;
      released++;
    }
  }

  /** Endpoints that have deliveries due now (at most `limit` of them). */
  async endpointsWithDueWork(limit = 1000): Promise<string[]> {
    const due = await this.deliveries.distinct('endpoint_id', { status: 'pending', next_attempt_at: { $lte: new Date().toISOString() } }, limit);
    return due.filter((id): id is string => typeof id === 'string');
  }

  /** When a lease taken at `now` for a send at once ends: the attempt's timeout, and a margin (the hand-over, recording the outcome). */
  leaseUntil(now: Date): string {
    return new Date(now.getTime() + this.leaseMs()).toISOString();
  }

  /** When a lease taken at `now` for a delivery that waits in its endpoint's line ends: long enough to wait one lease, then be sent with one. */
  lineLeaseUntil(now: Date): string {
    return new Date(now.getTime() + 2 * this.leaseMs()).toISOString();
  }

  /** Whether this process's lease of the delivery still holds a whole lease's time, as a claim now would take: no other replica can claim it before its attempt and outcome are done. */
  leaveTimeToSend(delivery: Delivery, now = Date.now()): boolean {
    return delivery.lease_until !== null && Date.parse(delivery.lease_until) - now >= this.leaseMs();
  }

  private leaseMs(): number {
    return this.options.timeoutMs + LEASE_MARGIN_MS;
  }

  /** Gives up this process's lease of a delivery it will not send now: due at once, for a claim. Whether it still held it. */
  async release(delivery: Delivery): Promise<boolean> {
    const released = await this.deliveries.update(
      delivery.id,
      { next_attempt_at: new Date().toISOString(), lease_until: null },
      { lease_until: delivery.lease_until },
    );
    return released !== null;
  }

  /** Claims the oldest due delivery of this endpoint, or of any endpoint; null when none is due. */
  async claimDue(endpointId?: string): Promise<Delivery | null> {
    const now = new Date();
    const leaseUntil = this.leaseUntil(now);
    return this.deliveries.claim(
      { ...(endpointId !== undefined ? { endpoint_id: endpointId } : {}), status: 'pending', next_attempt_at: { $lte: now.toISOString() } },
      { next_attempt_at: leaseUntil, lease_until: leaseUntil },
      'next_attempt_at',
    );
  }

  /** Sends one due delivery, of any endpoint; false when none is due. */
  async sendNextDue(): Promise<boolean> {
    const delivery = await this.claimDue();
    if (!delivery) return false;
    await this.send(delivery);
    return true;
  }

  /**
   * Attempts a delivery this worker has claimed, and records the outcome. `answered` is called once
   * the partner's endpoint is done with the request (answered, refused or timed out), before the
   * outcome is recorded: the endpoint's lane can take its next delivery meanwhile. Answers the
   * delivery as recorded (pending again, with its next attempt's time, when a retry is due).
   */
  async send(delivery: Delivery, answered?: () => void): Promise<Delivery> {
    const startedAt = new Date().toISOString();
    const started = performance.now();
    const result = await this.attempt(delivery);
    answered?.();
    const next = afterAttempt(delivery, { ...result, startedAt, durationMs: Math.round(performance.now() - started) }, new Date(), this.options.retrySchedule);
    // Only the holder of this lease records its outcome.
    await this.deliveries.update(delivery.id, next, { lease_until: delivery.lease_until });
    deliveryAttempts.inc({ outcome: result.ok ? 'succeeded' : 'failed' });
    if (result.ok) await this.health.recordSuccess(delivery.endpoint_id);
    else if (!result.final) await this.health.recordFailure(delivery.endpoint_id, new Date());
    if (!result.ok)
      this.logger.warn(
        `delivery ${delivery.id} of ${delivery.event_id} to ${delivery.endpoint_id} failed (${result.error}); ${next.status === 'pending' ? `next attempt at ${next.next_attempt_at}` : 'no attempts left'}`,
      );
    return next;
  }

  private async attempt(delivery: Delivery): Promise<AttemptResult> {
    const endpoint = await this.endpoints.views.get(delivery.endpoint_id);
    if (!endpoint || endpoint.deleted) return { ok: false, statusCode: null, error: 'endpoint_deleted', final: true };
    if (!endpoint.enabled) return { ok: false, statusCode: null, error: 'endpoint_disabled', final: true };
    const secret = this.secrets.open(endpoint.sealed_secret);
    const response = await this.sender.post({
      url: endpoint.url,
      body: delivery.body,
      timeoutMs: this.options.timeoutMs,
      policy: this.options.policy,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': this.options.userAgent,
        'X-SERVICE-Signature': signBody(secret, delivery.body),
        'X-SERVICE-Timestamp': String(Math.floor(Date.now() / 1000)),
        'X-SERVICE-Event': delivery.event,
        'X-SERVICE-Event-Id': delivery.event_id,
        'X-SERVICE-Delivery-Id': delivery.id,
      },
    });
    return { ok: response.ok, statusCode: response.statusCode, error: response.error };
  }
}
