import { ContextKey } from '@campaign-ops/async-context';
import { RecordedEvent, Subscription } from './event-store.port';
import { EventStoreLogger } from './event-store-logger';
import { reportSubscriptionFailure } from './subscription-failure';

/**
 * What a subscription source yields, in global order: an event to deliver, or the position of one
 * that is not to be delivered (a system event, a stream outside the filter) but was seen, so that a
 * resubscription need not ask for it again.
 */
export type FollowedItem = { kind: 'event'; event: RecordedEvent } | { kind: 'skipped'; position: string };

/**
 * One server-side subscription. Iterating it pulls the next item (so a slow handler holds the
 * source back); the iteration throws or ends when the subscription is dropped.
 */
export interface FollowedSource extends AsyncIterable<FollowedItem> {
  /** Stops the subscription; a pending iteration may then end, throw or never settle. */
  close(): Promise<void>;
}

export interface SourceSignals {
  /**
   * Proof of life other than an item: a confirmation, a heartbeat, "caught up", a checkpoint. A
   * checkpoint passes its position: everything up to it was scanned, nothing there is undelivered.
   */
  alive(position?: string): void;
}

export interface ResubscribingFollowerOptions {
  /** Deliver events strictly after this position; absent: from the very start. */
  fromPosition?: string;
  /** Opens a subscription delivering the items strictly after `fromPosition` (absent: from the start). */
  open(fromPosition: string | undefined, signals: SourceSignals): FollowedSource;
  /**
   * Asked when nothing arrived for `stallTimeoutMs` while waiting for the next item: whether the
   * subscription is stuck, e.g. because the store holds a deliverable event after `lastSeenPosition`.
   * Rejecting (the store does not answer) counts as stuck.
   */
  isStalled(lastSeenPosition: string | undefined): Promise<boolean>;
  /**
   * Errors of a source that resubscribing cannot cure (access denied, an undecodable event): they
   * stop the follower and go to onError.
   */
  isPermanent?(error: unknown): boolean;
  onEvent(event: RecordedEvent): Promise<void>;
  onError?(error: Error): void;
  stallTimeoutMs: number;
  /**
   * Delay before the n-th consecutive resubscription without progress: initialMs · 2^(n-1), at
   * most maxMs, with ±50 % jitter. The count starts over once a subscription delivers (or skips)
   * an event after the cursor, or stays up for STABLE_AFTER_MS (30 s).
   */
  backoff?: { initialMs?: number; maxMs?: number };
  /** For the jitter; tests pass a constant. */
  random?: () => number;
  logger: EventStoreLogger;
  /** Names the subscription in log lines. */
  name?: string;
  /** Called once the follower has stopped for good (closed or failed). */
  onFinished?(): void;
}

const DEFAULT_BACKOFF_INITIAL_MS = 200;
const DEFAULT_BACKOFF_MAX_MS = 15_000;
/** A subscription that stayed up this long worked, even if it had nothing to deliver: the backoff starts over after it. */
const STABLE_AFTER_MS = 30_000;
/** A source that does not finish closing within this long is left behind rather than blocking close(). */
const SOURCE_CLOSE_TIMEOUT_MS = 2_000;
/** How long after a first "stalled" answer the watchdog asks again before restarting. */
const STALL_CONFIRM_DELAY_MS = 1_000;

type Outcome = { kind: 'closed' } | { kind: 'failed'; error: unknown } | { kind: 'dropped'; error: unknown } | { kind: 'stalled' };

type Next = Outcome | { kind: 'item'; item: FollowedItem };

interface Attempt {
  /**
   * This source moved the cursor (delivered or skipped something new): resubscribing after it got
   * somewhere. A confirmation, a heartbeat or a checkpoint is not enough: a server that confirms
   * every subscription and then drops it would otherwise be asked again every initialMs forever.
   */
  progressed: boolean;
  openedAt: number;
}

/** Marks the async context of an onEvent call with the follower delivering it. */
const deliveringFor = new ContextKey<ResubscribingFollower>('ResubscribingFollower delivering');

/**
 * Follows a store from a position through a succession of subscriptions: hands each event to
 * `onEvent`, strictly one after the other; resubscribes, with backoff, after the last delivered
 * (or skipped) position when a subscription is dropped or ends; and, when nothing arrived for
 * `stallTimeoutMs` although the store has something to deliver (or does not answer), restarts the
 * subscription rather than waiting on a silent one forever. `onError` is only for what
 * resubscribing cannot fix: a failing handler, a permanent source error.
 */
export class ResubscribingFollower implements Subscription {
  private closed = false;
  /** Position of the last item delivered or skipped: resubscriptions start strictly after it. */
  private cursor: string | undefined;
  /** The cursor or the last checkpoint position, whichever is later: what the source has shown us. */
  private lastSeen: string | undefined;
  private attempt: Attempt | undefined;
  /** Counts items and signals, so that a stall verdict reached while one arrived can be ignored. */
  private activity = 0;
  private lastActivityAt = 0;
  /** Wakes whatever the follower is waiting on (the next item, a backoff) when it is closed. */
  private interrupt: (() => void) | undefined;
  private readonly finished: Promise<void>;
  private readonly name: string;

  constructor(private readonly options: ResubscribingFollowerOptions) {
    if (!(options.stallTimeoutMs > 0)) throw new Error(`stallTimeoutMs must be positive, got ${options.stallTimeoutMs}`);
    this.cursor = options.fromPosition;
    this.lastSeen = options.fromPosition;
    this.name = options.name ?? 'subscription';
    // Start on a later tick: onEvent must not run before the caller has the subscription.
    this.finished = Promise.resolve()
      .then(() => this.run())
      .catch((error: unknown) => this.fail(error))
      .finally(() => options.onFinished?.());
  }

  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.interrupt?.();
    }
    // Closed from inside its own onEvent: waiting for the loop would wait for the very handler awaiting us.
    if (deliveringFor.get() === this) return;
    await this.finished;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.closed) {
      const attempt: Attempt = { progressed: false, openedAt: Date.now() };
      this.attempt = attempt;
      let source: FollowedSource | undefined;
      let outcome: Outcome;
      try {
        source = this.options.open(this.cursor, { alive: (position) => this.onAlive(attempt, position) });
        outcome = await this.follow(source, attempt);
      } catch (error) {
        outcome = { kind: 'dropped', error };
      }
      this.attempt = undefined;
      if (source) await this.closeSource(source);

      if (outcome.kind === 'closed') return;
      if (outcome.kind === 'failed') return this.fail(outcome.error);
      if (outcome.kind === 'dropped' && this.options.isPermanent?.(outcome.error)) return this.fail(outcome.error);
      if (this.closed) return;

      // Starts over after progress, or after a subscription that stayed up a while (a quiet one that
      // ran for hours, then dropped, should not wait for the count of failures before it).
      failures = attempt.progressed || Date.now() - attempt.openedAt >= STABLE_AFTER_MS ? 1 : failures + 1;
      const delay = this.backoffDelay(failures);
      const after = this.cursor === undefined ? 'from the start' : `after position ${this.cursor}`;
      const reason =
        outcome.kind === 'stalled'
          ? `nothing received for ${this.options.stallTimeoutMs} ms although the store has events to deliver or does not answer`
          : outcome.error === undefined
            ? 'the subscription ended'
            : `the subscription was dropped: ${describe(outcome.error)}`;
      this.options.logger.warn(`${this.name}: ${reason}; resubscribing ${after} in ${delay} ms (attempt ${failures})`);
      await this.sleep(delay);
    }
  }

  private async follow(source: FollowedSource, attempt: Attempt): Promise<Outcome> {
    const iterator = source[Symbol.asyncIterator]();
    try {
      return await this.deliverFrom(iterator, attempt);
    } finally {
      // Lets the source release what the iteration holds; not awaited: after a stall it may never settle.
      try {
        Promise.resolve(iterator.return?.()).catch(() => undefined);
      } catch {
        // the source is being closed anyway
      }
    }
  }

  private async deliverFrom(iterator: AsyncIterator<FollowedItem>, attempt: Attempt): Promise<Outcome> {
    for (;;) {
      const next = await this.nextItem(iterator);
      if (next.kind !== 'item') return next;

      const { item } = next;
      const position = item.kind === 'event' ? item.event.position : item.position;
      // Strictly after the cursor: a source may start at the cursor itself, or repeat what a
      // previous subscription already delivered.
      if (this.cursor !== undefined && compareDecimal(position, this.cursor) <= 0) continue;

      if (item.kind === 'event') {
        if (this.closed) return { kind: 'closed' };
        try {
          await deliveringFor.run(this, () => this.options.onEvent(item.event));
        } catch (error) {
          return { kind: 'failed', error };
        }
      }
      this.cursor = position;
      attempt.progressed = true;
      if (this.lastSeen === undefined || compareDecimal(position, this.lastSeen) > 0) this.lastSeen = position;
      if (this.closed) return { kind: 'closed' };
    }
  }

  /**
   * The next item, or why there is none: the follower was closed, the source was dropped or ended,
   * or the watchdog found it stalled. Time spent in handlers is not silence: the watchdog only runs
   * while waiting here.
   */
  private nextItem(iterator: AsyncIterator<FollowedItem>): Promise<Next> {
    if (this.closed) return Promise.resolve({ kind: 'closed' });
    const { stallTimeoutMs } = this.options;
    this.lastActivityAt = Date.now();

    return new Promise<Next>((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const settle = (next: Next) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.interrupt = undefined;
        resolve(next);
      };
      this.interrupt = () => settle({ kind: 'closed' });

      // An abandoned next() (after close or a stall) may still settle later: both outcomes are handled.
      iterator.next().then(
        (result) => settle(result.done ? { kind: 'dropped', error: undefined } : { kind: 'item', item: result.value }),
        (error: unknown) => settle({ kind: 'dropped', error }),
      );

      /**
       * Asks the store whether the silence is a stall. A first "stalled" is confirmed by a second
       * answer a moment later, so that an event appended just before the first question, and not
       * yet pushed, does not cause a needless restart.
       */
      const check = (activitySince: number | undefined) => {
        const activityBefore = activitySince ?? this.activity;
        this.options
          .isStalled(this.lastSeen)
          .catch((error: unknown) => {
            if (!settled) {
              this.options.logger.warn(`${this.name}: the stall check got no answer from the store: ${describe(error)}`);
            }
            return true;
          })
          .then((stalled) => {
            if (settled) return;
            // Something arrived meanwhile: not stalled, whatever the answer.
            if (this.activity !== activityBefore) return watch();
            if (!stalled) {
              this.lastActivityAt = Date.now();
              return watch();
            }
            if (activitySince === undefined) {
              timer = setTimeout(() => check(activityBefore), Math.min(STALL_CONFIRM_DELAY_MS, stallTimeoutMs / 2));
              return;
            }
            settle({ kind: 'stalled' });
          });
      };
      const watch = () => {
        if (settled) return;
        const silentFor = Date.now() - this.lastActivityAt;
        if (silentFor < stallTimeoutMs) {
          timer = setTimeout(watch, stallTimeoutMs - silentFor);
          return;
        }
        check(undefined);
      };
      timer = setTimeout(watch, stallTimeoutMs);
    });
  }

  private onAlive(attempt: Attempt, position: string | undefined): void {
    // A signal from a source already replaced says nothing about the current one.
    if (attempt !== this.attempt) return;
    this.activity += 1;
    this.lastActivityAt = Date.now();
    if (position !== undefined && isDecimal(position)) {
      if (this.lastSeen === undefined || compareDecimal(position, this.lastSeen) > 0) this.lastSeen = position;
    }
  }

  private backoffDelay(failures: number): number {
    const initialMs = this.options.backoff?.initialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
    const maxMs = this.options.backoff?.maxMs ?? DEFAULT_BACKOFF_MAX_MS;
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 30));
    const jitter = 0.5 + (this.options.random ?? Math.random)();
    return Math.round(Math.min(maxMs, base * jitter));
  }

  /** Until the delay has passed or the follower is closed. */
  private sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.interrupt = undefined;
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.interrupt = wake;
    });
  }

  private async closeSource(source: FollowedSource): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        source.close(),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, SOURCE_CLOSE_TIMEOUT_MS);
          timer.unref();
        }),
      ]);
    } catch (error) {
      this.options.logger.warn(`${this.name}: closing the subscription failed: ${describe(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private fail(cause: unknown): void {
    this.closed = true;
    reportSubscriptionFailure(this.options.onError, cause);
  }
}

function isDecimal(value: string): boolean {
  return /^[0-9]+$/.test(value);
}

/** Positions are non-negative integers written in decimal (see the port and its contract). */
function compareDecimal(a: string, b: string): number {
  const difference = BigInt(a) - BigInt(b);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
