import { Inject, Injectable } from '@nestjs/common';
import { Bus, ConsumerProgress } from '@campaign-ops/bus';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';

/** The executor's durable consumer (dispatch-execution.message.controller.ts): its backlog is the launches' wait. */
export const EXECUTOR_DURABLE = 'dispatch-executor';

/** Where the executor's progress is read (DispatchWork: the dispatches still accepted, and what settled on the bus and in the relay's hand). */
export interface ExecutorProgress {
  progress(): Promise<ConsumerProgress>;
}
export const EXECUTOR_PROGRESS = Symbol('EXECUTOR_PROGRESS');

/** The executor's progress as its durable consumer on the bus counts it. */
export const executorOnBus = (bus: Bus): ExecutorProgress => ({ progress: () => bus.progress(EXECUTOR_DURABLE) });

/** A reading of the executor's progress is taken at most this often, and only while launches come. */
export const SAMPLE_EVERY_MS = 1_000;
/** Two readings further apart than this tell nothing about the current pace (an idle spell between them). */
const PACE_WINDOW_MS = 5_000;
/** Weight of the latest reading in the pace (an exponential average: a burst moves it within a few seconds). */
const PACE_WEIGHT = 0.5;
/**
 * The pace assumed when the executor settled nothing between two readings while work waited
 * (stuck, or every lane on a slow network): a backlog of this many per second of the bound is
 * refused, rather than an unbounded one.
 */
export const STALLED_PACE_PER_SECOND = 10;

export type BacklogVerdict = { refuse: false } | { refuse: true; retryAfterSeconds: number; waiting: number; pace: number };

/**
 * The overload rule (docs/api.md#dispatches-and-retries, "Overload"): a launch is refused while more work waits at the
 * executor than it settles in `boundSeconds` at its current pace. Given readings of the
 * executor's progress (pending deliveries, and a running count of those it settled) at their
 * times, it keeps the pace (settled per second, averaged) and judges a launch from the latest
 * reading. No pace is known until two readings within PACE_WINDOW_MS: nothing is refused then.
 */
export class BacklogBound {
  private last: { at: number; progress: ConsumerProgress } | null = null;
  private pace: number | null = null;

  constructor(private readonly boundSeconds: number) {}

  /** A reading of the executor's progress, taken at `at` (epoch ms). */
  observe(at: number, progress: ConsumerProgress): void {
    const last = this.last;
    this.last = { at, progress };
    if (!last || at <= last.at || at - last.at > PACE_WINDOW_MS || progress.settled < last.progress.settled) {
      // The first, too far apart, out of order, or a consumer made again (its count restarted): start over.
      this.pace = null;
      return;
    }
    const rate = ((progress.settled - last.progress.settled) * 1000) / (at - last.at);
    this.pace = this.pace === null ? rate : PACE_WEIGHT * rate + (1 - PACE_WEIGHT) * this.pace;
  }

  /**
   * Whether a launch at `at` (epoch ms) is refused, and for how long (whole seconds, at least 1)
   * its caller should wait. A reading older than PACE_WINDOW_MS refuses nothing: after a quiet
   * spell the backlog it saw may be gone.
   */
  verdict(at: number): BacklogVerdict {
    if (this.pace === null || this.last === null || at - this.last.at > PACE_WINDOW_MS) return { refuse: false };
    const pace = Math.max(this.pace, STALLED_PACE_PER_SECOND);
    const waiting = this.last.progress.pending;
    if (waiting <= pace * this.boundSeconds) return { refuse: false };
    const retryAfterSeconds = Math.min(this.boundSeconds, Math.max(1, Math.ceil((waiting - pace * this.boundSeconds) / pace)));
    return { refuse: true, retryAfterSeconds, waiting, pace };
  }

  /** When the latest reading was taken (epoch ms), or null before the first. */
  get readAt(): number | null {
    return this.last?.at ?? null;
  }
}

/**
 * The overload rule kept for this process's launches: each launch is judged from the latest
 * reading, and asks for a new one (from the bus, without waiting for it) once the latest is
 * SAMPLE_EVERY_MS old. Idle, it reads nothing. The reading is the same in every replica
 * (DispatchWork.progress).
 */
@Injectable()
export class DispatchBacklog {
  private readonly bound: BacklogBound;
  private reading: Promise<void> | null = null;
  /** The clock (a spec's own, or Date.now). */
  now: () => number = Date.now;

  constructor(
    @Inject(EXECUTOR_PROGRESS) private readonly executor: ExecutorProgress,
    @Inject(CONFIG) config: Pick<ServiceConfig, 'dispatchBacklogSeconds'>,
  ) {
    this.bound = new BacklogBound(config.dispatchBacklogSeconds);
  }

  /** The verdict for a launch now; asks for a fresh reading when the latest is stale. */
  check(): BacklogVerdict {
    const readAt = this.bound.readAt;
    if (this.reading === null && (readAt === null || this.now() - readAt >= SAMPLE_EVERY_MS)) {
      this.reading = this.executor
        .progress()
        .then((progress) => this.bound.observe(this.now(), progress))
        // The bus unreachable: the last verdict stands, and the next launch asks again.
        .catch(() => undefined)
        .finally(() => (this.reading = null));
    }
    return this.bound.verdict(this.now());
  }

  /** Resolves once the reading under way (if any) is taken: for specs. */
  async settled(): Promise<void> {
    await this.reading;
  }
}
