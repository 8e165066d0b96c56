import { Logger } from '@nestjs/common';
import { CheckpointStore, LeaseFence, LeaseLostError } from '@campaign-ops/read-store';

/**
 * Saves a processor's checkpoint at most every `everyMs`, fenced by the lease held when the
 * position was handled. Saving one per event would cost a durable write per event per processor;
 * batching them means a crash repeats at most the last `everyMs` of events, which every handler
 * takes in its stride (they are idempotent). A write refused for the fence tells `onLeaseLost`; any
 * other failure keeps the position for the next try.
 */
export class CheckpointSaver {
  private unsaved: { position: string; fence: LeaseFence | undefined } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    private readonly name: string,
    private readonly checkpoints: CheckpointStore,
    private readonly everyMs: number,
    private readonly logger: Logger,
    private readonly onLeaseLost: () => void,
  ) {}

  /** The position handled, saved within `everyMs`. */
  saveSoon(position: string, fence: LeaseFence | undefined): void {
    this.unsaved = { position, fence };
    if (this.timer) return;
    this.timer = setTimeout(() => void this.saveNow(), this.everyMs);
    this.timer.unref();
  }

  /** Saves what is waiting now (after the saves already under way). */
  saveNow(): Promise<void> {
    this.clearTimer();
    this.saving = this.saving.then(async () => {
      const pending = this.unsaved;
      if (pending === null) return;
      this.unsaved = null;
      try {
        await this.checkpoints.set(this.name, pending.position, pending.fence);
      } catch (error) {
        if (error instanceof LeaseLostError) return this.onLeaseLost();
        // Not saved: keep it for the next try; at worst a restart repeats a few events.
        this.unsaved ??= pending;
        this.logger.warn(`checkpoint not saved: ${(error as Error).message}`);
      }
    });
    return this.saving;
  }

  /** Forgets what is waiting (a run ended: its positions may no longer be this instance's to save). */
  forget(): void {
    this.unsaved = null;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
