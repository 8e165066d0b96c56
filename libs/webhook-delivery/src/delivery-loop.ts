import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { DeliveryWorker } from './delivery-worker';

/** How often the store is asked which endpoints have due work (retries coming due, other replicas' deliveries). */
const DISCOVERY_INTERVAL_MS = 250;

/**
 * Sends due deliveries, each endpoint in its own queue: at most WEBHOOK_CONCURRENCY in flight in
 * all, at most WEBHOOK_ENDPOINT_CONCURRENCY to one endpoint, and the endpoints with due work served round-robin. So a partner that answers slowly, or not
 * at all, holds its own few lanes and never the others'.
 *
 * Each delivery is claimed in the store (a lease) just before it is sent, so replicas never send
 * the same one at once, and nothing is held that is not being sent. Which endpoints have work is
 * learnt from fan-out and redelivery (`kick` with their ids), from each endpoint's own sends (it
 * stays in the round until it has nothing due), and by asking the store every 250 ms (retries come due at their time).
 */
@Injectable()
export class DeliveryLoop {
  private readonly logger = new Logger('webhook-delivery');
  private readonly concurrency: number;
  private readonly endpointConcurrency: number;
  private running = false;
  private inFlight = 0;
  private readonly inFlightTo = new Map<string, number>();
  /** The round: endpoints that may have due work, each once, served from the front. */
  private readonly round = new Set<string>();
  private filling: Promise<void> | null = null;
  private fillAgain = false;
  private discovering = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly sends = new Set<Promise<void>>();

  constructor(
    private readonly worker: DeliveryWorker,
    @Inject(CONFIG) config: ServiceConfig,
  ) {
    this.concurrency = config.webhook.concurrency;
    this.endpointConcurrency = config.webhook.endpointConcurrency;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.timer = setInterval(() => this.discover(), DISCOVERY_INTERVAL_MS);
    this.discover();
  }

  /** Work was stored for these endpoints (or, without ids, somewhere): send it now rather than at the next look. */
  kick(endpointIds?: readonly string[]): void {
    if (!endpointIds) return this.discover();
    for (const id of endpointIds) this.round.add(id);
    this.fill();
  }

  /** Stops taking work and waits for the sends under way. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.filling;
    await Promise.all(this.sends);
  }

  private discover(): void {
    if (!this.running || this.discovering) return;
    this.discovering = true;
    this.worker
      .endpointsWithDueWork()
      .then((ids) => this.kick(ids))
      .catch((error: Error) => this.logger.error(`looking for due deliveries failed: ${error.message}`))
      .finally(() => (this.discovering = false));
  }

  /** Starts sends until the lanes are full or no endpoint in the round has anything due; one fill at a time. */
  private fill(): void {
    if (this.filling) {
      this.fillAgain = true;
      return;
    }
    this.filling = this.fillLanes()
      .catch((error: Error) => this.logger.error(`claiming due deliveries failed: ${error.message}`))
      .finally(() => {
        this.filling = null;
        if (this.fillAgain && this.running) this.fill();
      });
  }

  private async fillLanes(): Promise<void> {
    do {
      this.fillAgain = false;
      for (const endpointId of this.round) {
        if (!this.running || this.inFlight >= this.concurrency) return;
        this.round.delete(endpointId);
        // An endpoint at its limit comes back into the round when one of its sends ends.
        if ((this.inFlightTo.get(endpointId) ?? 0) >= this.endpointConcurrency) continue;
        const delivery = await this.worker.claimDue(endpointId);
        if (!delivery) continue; // nothing due: out of the round until there is
        this.round.add(endpointId); // to the back: the others come first
        this.track(endpointId, +1);
        const send: Promise<void> = this.worker
          .send(delivery)
          .catch((error: Error) => this.logger.error(`sending ${delivery.id} failed: ${error.message}`))
          .finally(() => {
            this.sends.delete(send);
            this.track(endpointId, -1);
            this.round.add(endpointId);
            if (this.running) this.fill();
          });
        this.sends.add(send);
      }
    } while (this.fillAgain && this.running);
  }

  private track(endpointId: string, change: 1 | -1): void {
    this.inFlight += change;
    const count = (this.inFlightTo.get(endpointId) ?? 0) + change;
    if (count > 0) this.inFlightTo.set(endpointId, count);
    else this.inFlightTo.delete(endpointId);
  }
}
