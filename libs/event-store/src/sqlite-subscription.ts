// A subscription to the SQLite event store: a loop that reads batches after its cursor, up to a
// head read first, delivers them one by one, and waits to be notified of more (by an append through
// its store, or by the store's one poll of the file for other processes' appends).
import { ContextKey } from '@campaign-ops/async-context';
import { RecordedEvent, SubscribeToAllOptions, Subscription } from './event-store.port';
import { reportSubscriptionFailure } from './subscription-failure';

/** Subscriptions read at most this many events at a time, so a long backlog never sits in memory at once. */
export const SUBSCRIPTION_BATCH_SIZE = 500;

export type BatchReader = (after: number, upTo: number) => RecordedEvent[];

export interface EventSource {
  /** The highest committed position, 0 when there are no events. */
  head(): number;
  readBatch: BatchReader;
}

/** Whether a subscription to `prefixes` (none: every stream) delivers the events of this stream. */
export const streamFollowed = (prefixes: readonly string[] | undefined, streamId: string): boolean =>
  prefixes === undefined || prefixes.some((prefix) => streamId.startsWith(prefix));

/** Marks the async context of an onEvent call with the subscription delivering it. */
const deliveringFor = new ContextKey<SqliteSubscription>('SqliteSubscription delivering');

export class SqliteSubscription implements Subscription {
  private closed = false;
  /** Set by notify(); checked before going idle so that a notification during delivery is not lost. */
  private notified = false;
  private wake: (() => void) | undefined;
  private readonly finished: Promise<void>;

  constructor(
    private readonly source: EventSource,
    private readonly options: SubscribeToAllOptions,
    fromPosition: number,
    onFinished: () => void,
  ) {
    // Start on a later tick: onEvent must not run before subscribeToAll has returned the subscription.
    this.finished = Promise.resolve()
      .then(() => this.run(fromPosition))
      .finally(onFinished);
  }

  /** Whether events of this stream are among those it delivers (its stream prefixes, or every stream). */
  follows(streamId: string): boolean {
    return streamFollowed(this.options.streamPrefixes, streamId);
  }

  /** New events may be there (appended through this process, or found by the store's poll): look now. */
  notify(): void {
    this.notified = true;
    this.wake?.();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    // Closed from inside its own onEvent: waiting for the loop would wait for the very handler awaiting us.
    if (deliveringFor.get() === this) return;
    await this.finished;
  }

  private async run(cursor: number): Promise<void> {
    while (!this.closed) {
      this.notified = false;
      let head: number;
      let batch: RecordedEvent[];
      try {
        // Reading the head first bounds the scan: with a prefix filter, the cursor can then move past
        // events that do not match, instead of rescanning them at every poll. Every position up to the
        // head is already committed (see the comment on SCHEMA in sqlite-event-rows.ts), so nothing below it can appear later.
        head = this.source.head();
        batch = head > cursor ? this.source.readBatch(cursor, head) : [];
      } catch (error) {
        return this.fail(error);
      }

      for (const event of batch) {
        if (this.closed) return;
        try {
          await deliveringFor.run(this, () => this.options.onEvent(event));
        } catch (error) {
          return this.fail(error);
        }
        cursor = Number(event.position);
      }

      if (batch.length === SUBSCRIPTION_BATCH_SIZE) continue;
      cursor = Math.max(cursor, head);
      if (!this.notified && !this.closed) await this.idle();
    }
  }

  /** Until a notification or close(). */
  private idle(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }

  private fail(cause: unknown): void {
    this.closed = true;
    reportSubscriptionFailure(this.options.onError, cause);
  }
}
