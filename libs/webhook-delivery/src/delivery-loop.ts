import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { Delivery } from '@campaign-ops/webhook-domain';
import { DeliveryWorker } from './delivery-worker';
import { DueRetries } from './due-retries';

/**
 * How often the store is asked which endpoints have due work that this process was not told of:
 * other replicas' deliveries, a previous run's, retries another replica scheduled. (Retries this
 * process scheduled wake it at their time: DueRetries.) Once a second: each look wakes the process
 * and queries the store, which is most of what an idle webhook-delivery-service does.
 */
const DISCOVERY_INTERVAL_MS = 1000;
/**
 * How many deliveries may wait in an endpoint's line (DeliveryLoop.queue) per lane it has: under a
 * closed loop's load one lane's worth left most deliveries to be stored due and claimed (bursts of
 * a commit's worth outgrow it), four left almost none (measured: 0.47 claims a delivery -> 0.1).
 * A healthy endpoint works off its line in a few sends' time, well within a lease's margin; one
 * whose lease would end first is made due again instead.
 */
const LINE_PER_LANE = 4;

/**
 * A lane taken for a delivery the fan-out is about to store (DeliveryLoop.reserve): the delivery
 * is stored leased until `leaseUntil`, as a claim would leave it, and sent in this lane without a
 * claim; or the lane is given back unused.
 */
export interface ReservedLane {
  leaseUntil: string;
  /** Sends the delivery, stored leased until `leaseUntil`. */
  send(delivery: Delivery): void;
  /** The delivery was not stored (stored before, or the write failed): the lane is free again. */
  release(): void;
}

/** A place in an endpoint's line (DeliveryLoop.queue): its delivery once stored, null until then. */
type Place = { delivery: Delivery | null };

/**
 * Sends due deliveries, each endpoint in its own queue: at most WEBHOOK_CONCURRENCY in flight in
 * all, at most WEBHOOK_ENDPOINT_CONCURRENCY to one endpoint, and the endpoints with due work served round-robin. So a partner that answers slowly, or not
 * at all, holds its own few lanes and never the others'.
 *
 * Each delivery is claimed in the store (a lease) just before it is sent, so replicas never send
 * the same one at once; a new delivery that finds a lane free is stored leased instead and sent
 * at once (reserve), and one that finds the endpoint's lanes all taken is stored leased and held
 * in the endpoint's line, a few at most, for its next lane (queue): the claim is for retries and
 * what another process stored. Which endpoints have work is
 * learnt from fan-out and redelivery (`kick` with their ids), from each endpoint's own sends (it
 * stays in the round until it has nothing due), from the retries its sends scheduled (at their time),
 * and by asking the store every second.
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
  /**
   * Endpoints known to have deliveries stored due (kicked for them, or their last claims all found
   * one): a new delivery to one of them takes its turn behind those (the claims' order) rather than
   * a lane ahead of them, which under load kept the oldest waiting for seconds.
   */
  private readonly backlogged = new Set<string>();
  private filling: Promise<void> | null = null;
  private fillAgain = false;
  private discovering = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly sends = new Set<Promise<void>>();
  /**
   * Per endpoint, deliveries stored leased to this process while its lanes were full (queue): each
   * freed lane of the endpoint takes the first, with no claim. At most LINE_PER_LANE a lane wait.
   */
  private readonly held = new Map<string, Place[]>();
  private readonly retries = new DueRetries((endpointIds) => {
    if (this.running) this.kick(endpointIds);
  });

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
    for (const id of endpointIds) {
      this.round.add(id);
      this.backlogged.add(id);
    }
    this.fill();
  }

  /**
   * A lane for a new delivery to this endpoint, if one is free now (within both limits) and none of
   * the endpoint's deliveries is known to wait due, else null: the delivery is then stored due, and
   * the round takes it in its turn.
   */
  reserve(endpointId: string): ReservedLane | null {
    if (!this.running || this.inFlight >= this.concurrency || (this.inFlightTo.get(endpointId) ?? 0) >= this.endpointConcurrency) return null;
    if (this.backlogged.has(endpointId)) return null;
    this.track(endpointId, +1);
    let used = false;
    const use = () => {
      if (used) throw new Error(`a lane reserved for ${endpointId} was used twice`);
      used = true;
    };
    return {
      leaseUntil: this.worker.leaseUntil(new Date()),
      send: (delivery) => {
        use();
        // Stopping: the delivery stays leased, and is sent once its lease ends (standalone: at the next start).
        if (this.running) this.sendInLane(endpointId, delivery);
        else this.track(endpointId, -1);
      },
      release: () => {
        use();
        this.laneFreed(endpointId, { toRound: false, fill: true });
      },
    };
  }

  /**
   * A place in line for a new delivery to this endpoint when its own lanes are all taken (reserve
   * answered null for that) and none of its deliveries is known to wait due: the delivery is
   * stored leased, as a reserved lane's is, and sent by the next lane of the endpoint that frees,
   * in the order of the line, instead of being stored due and claimed (a write less a delivery
   * under load). Null when the line is full (LINE_PER_LANE a lane), and otherwise.
   */
  queue(endpointId: string): ReservedLane | null {
    if (!this.running || this.backlogged.has(endpointId)) return null;
    if ((this.inFlightTo.get(endpointId) ?? 0) < this.endpointConcurrency) return null;
    const line = this.held.get(endpointId) ?? [];
    if (line.length >= LINE_PER_LANE * this.endpointConcurrency) return null;
    // The place is taken now, so that the line's bound holds while the delivery is being stored.
    const place: Place = { delivery: null };
    line.push(place);
    this.held.set(endpointId, line);
    let used = false;
    const use = () => {
      if (used) throw new Error(`a place in line for ${endpointId} was used twice`);
      used = true;
    };
    return {
      leaseUntil: this.worker.lineLeaseUntil(new Date()),
      send: (delivery) => {
        use();
        const inLine = this.held.get(endpointId)?.includes(place) ?? false;
        const sending = this.inFlightTo.get(endpointId) ?? 0;
        const laneFree = sending < this.endpointConcurrency && this.inFlight < this.concurrency;
        // Still in line, no lane free, and a send of the endpoint under way: its lane, once free, takes the line's first.
        if (this.running && inLine && sending > 0 && !laneFree) return void (place.delivery = delivery);
        this.leave(endpointId, place);
        // Stopping: the delivery stays leased, and is sent once its lease ends (standalone: at the next start).
        if (!this.running) return;
        // A lane freed while it was being stored (one passed over it): sent now, in that lane.
        if (inLine && laneFree) {
          this.track(endpointId, +1);
          return this.sendInLane(endpointId, delivery);
        }
        // The line was let go, or no lane will come for it: due, for a claim.
        this.makeDue(endpointId, delivery);
      },
      release: () => {
        use();
        this.leave(endpointId, place);
      },
    };
  }

  private leave(endpointId: string, place: Place): void {
    const line = this.held.get(endpointId);
    if (!line) return;
    const at = line.indexOf(place);
    if (at >= 0) line.splice(at, 1);
    if (line.length === 0) this.held.delete(endpointId);
  }

  /** Stops taking work and waits for the sends under way. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.retries.stop();
    // What waits in line stays leased: sent once its lease ends (standalone: at the next start).
    this.held.clear();
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

  /**
   * Serves the round: for each endpoint in turn, as many claims at once as it has lanes free
   * (within the total), which share their commits, when it is known to have deliveries waiting due;
   * else one claim first (most often nothing is due: a send has just ended), and the rest once it
   * found one. The lanes are counted before the claims, so a new delivery cannot take them meanwhile.
   */
  private async fillLanes(): Promise<void> {
    do {
      this.fillAgain = false;
      for (const endpointId of this.round) {
        if (!this.running || this.inFlight >= this.concurrency) return;
        this.round.delete(endpointId);
        const free = Math.min(this.endpointConcurrency - (this.inFlightTo.get(endpointId) ?? 0), this.concurrency - this.inFlight);
        // An endpoint at its limit comes back into the round when one of its sends ends.
        if (free <= 0) continue;
        const first = this.backlogged.has(endpointId) ? free : 1;
        const more = (await this.claimAndSend(endpointId, first)) && (first === free || (await this.claimAndSend(endpointId, free - first)));
        if (more) {
          // Perhaps more due: to the back of the round, the others come first.
          this.round.add(endpointId);
          this.backlogged.add(endpointId);
        } else {
          // Nothing more due: out of the round until there is.
          this.backlogged.delete(endpointId);
        }
      }
    } while (this.fillAgain && this.running);
  }

  /** `count` claims at once in lanes counted first; sends what they find. Whether every claim found one. */
  private async claimAndSend(endpointId: string, count: number): Promise<boolean> {
    for (let lane = 0; lane < count; lane++) this.track(endpointId, +1);
    const claims = await Promise.allSettled(Array.from({ length: count }, () => this.worker.claimDue(endpointId)));
    let found = 0;
    let failure: unknown;
    for (const claim of claims) {
      if (claim.status === 'fulfilled' && claim.value) {
        found++;
        this.sendInLane(endpointId, claim.value);
        continue;
      }
      if (claim.status === 'rejected') failure = claim.reason;
      this.laneFreed(endpointId, { toRound: false, fill: false });
    }
    if (failure !== undefined) throw failure;
    return found === count;
  }

  /**
   * Sends a delivery this process holds the lease of, in a lane already counted. The lane frees
   * once the endpoint has answered (the limits bound requests at the partner, not our bookkeeping),
   * or when the send fails before that; stop() still waits for the outcome to be recorded.
   */
  private sendInLane(endpointId: string, delivery: Delivery): void {
    let holding = true;
    const free = () => {
      if (!holding) return;
      holding = false;
      this.laneFreed(endpointId, { toRound: true, fill: true });
    };
    const send: Promise<void> = this.worker
      .send(delivery, free)
      .then((next) => {
        if (next.status === 'pending' && next.next_attempt_at && this.running) this.retries.add(endpointId, Date.parse(next.next_attempt_at));
      })
      .catch((error: Error) => this.logger.error(`sending ${delivery.id} failed: ${error.message}`))
      .finally(() => {
        this.sends.delete(send);
        free();
      });
    this.sends.add(send);
  }

  /**
   * A lane of the endpoint is free (its send's partner answered, or a lane reserved or claimed for
   * it found nothing to send): it goes to the endpoint's next delivery in line, counted as it is,
   * unless another endpoint waits for a lane (then the line joins the round, due, as if stored so);
   * else it is given back, the endpoint to the round if `toRound`, and the lanes filled if `fill`.
   */
  private laneFreed(endpointId: string, then: { toRound: boolean; fill: boolean }): void {
    if (this.running && this.held.has(endpointId)) {
      // Another endpoint waits only when the total is what holds it back: it is in the round, below its own limit.
      const othersWait =
        this.inFlight >= this.concurrency && [...this.round].some((id) => id !== endpointId && (this.inFlightTo.get(id) ?? 0) < this.endpointConcurrency);
      const next = othersWait ? this.releaseLine(endpointId) : this.nextInLine(endpointId);
      if (next) return this.sendInLane(endpointId, next);
    }
    this.track(endpointId, -1);
    if (then.toRound) this.round.add(endpointId);
    if (then.fill && this.running) this.fill();
  }

  /**
   * The first delivery in the endpoint's line that its lease leaves time to send (the attempt's
   * timeout, within which no other replica may claim it); one whose lease would end first is made
   * due again, for a claim. Places still being stored are passed over.
   */
  private nextInLine(endpointId: string): Delivery | undefined {
    const line = this.held.get(endpointId) ?? [];
    let next: Delivery | undefined;
    for (let i = 0; i < line.length && !next; i++) {
      const { delivery } = line[i];
      if (delivery === null) continue;
      line.splice(i--, 1);
      if (this.worker.leaveTimeToSend(delivery)) next = delivery;
      else this.makeDue(endpointId, delivery);
    }
    if (line.length === 0) this.held.delete(endpointId);
    return next;
  }

  /** Every delivery in the endpoint's line made due, for the round's claims (in their turn); none to send. */
  private releaseLine(endpointId: string): undefined {
    const line = this.held.get(endpointId) ?? [];
    this.held.delete(endpointId);
    // A place still being stored is left to its send, which finds it out of line and makes it due.
    for (const place of line) if (place.delivery !== null) this.makeDue(endpointId, place.delivery);
    return undefined;
  }

  /** A delivery this process holds leased that it will not send from the line: due now, for the round's claims. */
  private makeDue(endpointId: string, delivery: Delivery): void {
    this.worker
      .release(delivery)
      .then(() => this.running && this.kick([endpointId]))
      .catch((error: Error) => this.logger.error(`releasing ${delivery.id} failed: ${error.message}; it is due once its lease ends`));
  }

  private track(endpointId: string, change: 1 | -1): void {
    this.inFlight += change;
    const count = (this.inFlightTo.get(endpointId) ?? 0) + change;
    if (count > 0) this.inFlightTo.set(endpointId, count);
    else this.inFlightTo.delete(endpointId);
  }
}
