import { Logger } from '@nestjs/common';
import { EventStore, RecordedEvent, Subscription } from '@campaign-ops/event-store';
import { CheckpointStore } from '@campaign-ops/read-store';
import { processorCheckpoint, processorEvents, processorLag } from './metrics';
import { withRequestId } from './request-context';

export interface CheckpointedOptions {
  /** Names the checkpoint: one per processor, e.g. `dispatch-relay`. */
  name: string;
  eventStore: EventStore;
  checkpoints: CheckpointStore;
  streamPrefixes: string[];
  /** Must be idempotent: after a crash the events since the last checkpoint come again. */
  handle(event: RecordedEvent): Promise<void>;
}

/**
 * Follows the event store from a stored checkpoint and hands each event, in order, to `handle`,
 * saving the checkpoint after it. A failure restarts from the checkpoint after a backoff, so an
 * event is never skipped; a crash repeats at most the events since the last checkpoint.
 * Relays (event store → bus) and projections (event store → read models) are both this.
 */
const CHECKPOINT_EVERY_MS = 100;

export class CheckpointedProcessor {
  private readonly logger: Logger;
  private subscription: Subscription | null = null;
  private stopped = false;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  /** Handled but not yet saved: checkpoints are saved at most every CHECKPOINT_EVERY_MS. */
  private unsaved: string | null = null;
  private saveTimer: NodeJS.Timeout | null = null;
  private saving: Promise<void> = Promise.resolve();

  constructor(private readonly options: CheckpointedOptions) {
    this.logger = new Logger(`processor:${options.name}`);
  }

  async start(): Promise<void> {
    this.stopped = false;
    const from = await this.options.checkpoints.get(this.options.name);
    if (this.stopped) return;
    this.subscription = this.options.eventStore.subscribeToAll({
      fromPosition: from,
      streamPrefixes: this.options.streamPrefixes,
      onEvent: async (event) => {
        await withRequestId(event.metadata.requestId as string | undefined, () => this.options.handle(event));
        this.saveSoon(event.position);
        this.failures = 0;
        const occurred = Date.parse(event.occurredAt);
        processorEvents.inc({ processor: this.options.name });
        processorLag.set({ processor: this.options.name }, Math.max(0, (Date.now() - occurred) / 1000));
        processorCheckpoint.set({ processor: this.options.name }, occurred / 1000);
      },
      onError: (error) => this.restartAfterFailure(error),
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.subscription?.close();
    this.subscription = null;
    await this.saveNow();
  }

  /**
   * Saving a checkpoint per event would cost a durable write per event per processor; batching
   * them means a crash repeats at most the last CHECKPOINT_EVERY_MS of events, which every handler
   * takes in its stride (they are idempotent).
   */
  private saveSoon(position: string): void {
    this.unsaved = position;
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(() => void this.saveNow(), CHECKPOINT_EVERY_MS);
    this.saveTimer.unref();
  }

  private saveNow(): Promise<void> {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = null;
    this.saving = this.saving.then(async () => {
      const position = this.unsaved;
      if (position === null) return;
      this.unsaved = null;
      try {
        await this.options.checkpoints.set(this.options.name, position);
      } catch (error) {
        // Not saved: keep it for the next try; at worst a restart repeats a few events.
        this.unsaved ??= position;
        this.logger.warn(`checkpoint not saved: ${(error as Error).message}`);
      }
    });
    return this.saving;
  }

  private restartAfterFailure(error: Error): void {
    if (this.stopped) return;
    this.failures++;
    const delay = Math.min(30_000, 200 * 2 ** Math.min(this.failures, 8));
    this.logger.warn(`stopped on an error, restarting from the checkpoint in ${delay} ms: ${error.message}`);
    this.subscription = null;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.start().catch((e: Error) => this.restartAfterFailure(e));
    }, delay);
    this.restartTimer.unref();
  }
}
