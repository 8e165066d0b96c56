import { Logger } from '@nestjs/common';
import { CheckpointStore, LeaseFence } from '@campaign-ops/read-store';
import { processorLeaseTakes, ProcessorLeaseOptions } from './processor-status';

/**
 * A checkpointed processor's lease, as one replica holds it: taken (at most one holder across
 * replicas, in the read store beside the checkpoint), renewed every `renewMs`, and valid by this
 * process's own clock until `ttlMs` after the last renewal was sent. When a renewal is refused,
 * or the clock says it expired (a paused process), it is lost: `onLost` is told, once.
 */
export class ProcessorLease {
  /** The lease while it is held, and until when it is surely still this instance's by `clock`. */
  private held: { fence: LeaseFence; validUntil: number; renewing: boolean } | null = null;
  private renewTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly name: string,
    private readonly options: ProcessorLeaseOptions,
    private readonly checkpoints: CheckpointStore,
    private readonly clock: () => number,
    private readonly logger: Logger,
    /** Told when it is lost, unless `ignoring` says the processor no longer cares (it was stopped: it releases it itself). */
    private readonly onLost: (reason: string) => void,
    private readonly ignoring: () => boolean,
  ) {}

  get fence(): LeaseFence | undefined {
    return this.held?.fence;
  }

  get isHeld(): boolean {
    return this.held !== null;
  }

  /** Held, and not expired by this process's clock. */
  get valid(): boolean {
    return this.held !== null && this.clock() < this.held.validUntil;
  }

  /**
   * Tries to take it (`evenIfHeld`: whoever holds it); answers whether it is held now. `stillWanted`
   * is asked once the store answered: a lease taken for a processor stopped meanwhile goes back.
   */
  async take(evenIfHeld: boolean, stillWanted: () => boolean): Promise<boolean> {
    const { holder, ttlMs, renewMs } = this.options;
    const sentAt = this.clock();
    const taken = await this.checkpoints.acquireLease(this.name, holder, ttlMs, { evenIfHeld });
    if (!stillWanted()) {
      if (taken) await this.checkpoints.releaseLease(this.name, taken).catch(() => undefined);
      return false;
    }
    if (!taken) return false;
    this.held = { fence: { holder: taken.holder, epoch: taken.epoch }, validUntil: sentAt + ttlMs, renewing: false };
    processorLeaseTakes.inc({ processor: this.name });
    this.logger.log(`took the lease (epoch ${taken.epoch}): this replica runs ${this.name}`);
    this.renewTimer = setInterval(() => void this.renew(), renewMs);
    this.renewTimer.unref();
    return true;
  }

  private async renew(): Promise<void> {
    const held = this.held;
    if (!held) return;
    if (this.clock() >= held.validUntil) return this.lose(`not renewed within ${this.options.ttlMs} ms by this process's clock`);
    if (held.renewing) return;
    held.renewing = true;
    const sentAt = this.clock();
    try {
      const renewed = await this.checkpoints.renewLease(this.name, held.fence, this.options.ttlMs);
      if (this.held !== held) return;
      if (renewed) held.validUntil = sentAt + this.options.ttlMs;
      else this.lose('another replica took it over, or an operator reset the checkpoint');
    } catch (error) {
      this.logger.warn(`lease not renewed (retrying until it expires): ${(error as Error).message}`);
    } finally {
      held.renewing = false;
    }
  }

  /** No longer this instance's: forgotten here (not released: someone else has it, or it expired), and `onLost` told. */
  lose(reason: string): void {
    const held = this.held;
    if (!held || this.ignoring()) return;
    this.logger.warn(`lost the lease (epoch ${held.fence.epoch}): ${reason}; standing by`);
    this.held = null;
    this.stopRenewing();
    this.onLost(reason);
  }

  /** Lets it go at once (if still this holder's), so another instance takes it without waiting for the TTL. */
  async release(): Promise<void> {
    const held = this.held;
    if (!held) return;
    this.held = null;
    this.stopRenewing();
    await this.checkpoints.releaseLease(this.name, held.fence).catch((error: Error) => this.logger.warn(`lease not released (it expires): ${error.message}`));
  }

  stopRenewing(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = null;
  }
}
