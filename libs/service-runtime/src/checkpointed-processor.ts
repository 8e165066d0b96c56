import { Logger } from '@nestjs/common';
import { EventStore, RecordedEvent, Subscription, SubscriptionPositionRefusedError } from '@campaign-ops/event-store';
import { CheckpointStore } from '@campaign-ops/read-store';
import { CheckpointSaver } from './checkpoint-saver';
import { processorCheckpoint, processorEvents, processorLag } from './metrics';
import { ProcessorLease } from './processor-lease';
import { processorLeaseDefaults, ProcessorLeaseOptions, ProcessorState, reportProcessorState } from './processor-status';
import { withRequestId } from './request-context';

export interface CheckpointedOptions {
  /** Names the checkpoint: one per processor, e.g. `dispatch-relay`. */
  name: string;
  eventStore: EventStore;
  checkpoints: CheckpointStore;
  streamPrefixes: string[];
  /** Must be idempotent: after a crash the events since the last checkpoint come again. */
  handle(event: RecordedEvent): Promise<void>;
  /**
   * How many events may be in `handle` at once (default 1: one after the other). Handlers start
   * in the order of the events; the checkpoint passes an event only once it and every event before
   * it are handled. More than 1 suits handlers whose effects need no order among themselves
   * (a relay whose publishes are de-duplicated by id), and lets their writes share a group commit.
   */
  concurrency?: number;
  /**
   * One active instance across replicas: the instance that holds the processor's lease (in the
   * read store, beside its checkpoint) follows the event store, the others stand by and take it
   * over when it is not renewed within `ttlMs`. Undefined: this process's settings
   * (useProcessorLeases, from the config); null: none, every instance runs.
   */
  lease?: ProcessorLeaseOptions | null;
  /** A monotonic clock in ms, by which the holder sees its lease expire (tests stop it). Default: performance.now. */
  clock?: () => number;
  /** While its checkpoint is ahead of the event store's head, how often it looks again (default 5 s). */
  headRecheckMs?: number;
  /**
   * While the event store refuses its checkpoint (not a position of that database), how often it
   * asks again (default 5 minutes): the right database may have been restored meanwhile. It stays
   * refusing (not ready, nothing logged again) until the store accepts it.
   */
  refusedRecheckMs?: number;
}

/**
 * Follows the event store from a stored checkpoint and hands each event, in order, to `handle`,
 * saving the checkpoint after it. A failure restarts from the checkpoint after a backoff, so an
 * event is never skipped; a crash repeats at most the events since the last checkpoint.
 * Relays (event store → bus) and projections (event store → read models) are both this.
 *
 * Across replicas, one instance runs (see `lease`). Its checkpoint writes are fenced by the
 * lease's epoch: once another replica took the lease over, they fail and change nothing, and the
 * instance stops; it also stops handling as soon as a renewal is refused or the lease expired by
 * its own clock. What a paused holder still does before it notices is harmless: the relays'
 * publishes are de-duplicated by message id, the projections' upserts are revision-guarded.
 *
 * At every start it compares its checkpoint with the event store's head, and refuses to run while
 * the checkpoint is ahead (an event store recreated or restored while the read store kept its
 * checkpoints): it would skip every event up to there. It refuses the same way a checkpoint the
 * event store refuses to subscribe from (EventStoreDB: not a position of this database), which no
 * retry can mend. The process is then not ready (/readyz) until an operator resets the checkpoint
 * (`npm run ops -- processors reset NAME --to-start|--to-head`).
 *
 * Its parts: the lease (ProcessorLease), the batched, fenced checkpoint saves (CheckpointSaver),
 * and here the following itself: the head check, the window of events in hand, restarts.
 */
const CHECKPOINT_EVERY_MS = 100;
/** A refused checkpoint asked for again counts as accepted once the subscription has delivered, or stayed quiet (no refusal) this long. */
const PROBE_QUIET_MS = 5_000;
/** With concurrency, how many handled events may wait behind an unfinished one, per lane. */
const WINDOW_PER_LANE = 16;

export class CheckpointedProcessor {
  private readonly logger: Logger;
  private readonly leaseOptions: ProcessorLeaseOptions | null;
  /** Null when every instance runs (no lease). */
  private readonly lease: ProcessorLease | null;
  private readonly saver: CheckpointSaver;
  private readonly clock: () => number;
  private subscription: Subscription | null = null;
  private stopped = true;
  private failures = 0;
  /** The next attempt to run: after a failure, while standing by, while refusing. */
  private retryTimer: NodeJS.Timeout | null = null;
  /** Events handed to `handle` and not yet checkpointable, in order, each with whether it is done. */
  private window: Array<{ position: string; done: boolean; finished: Promise<void> }> = [];
  /** Bumped at every (re)start: a handler of an earlier run that fails later restarts nothing. */
  private run = 0;
  private firstAttempt = true;
  /**
   * A checkpoint the event store refused to subscribe from, and when (by `clock`): refused again
   * without asking until it changes (a reset) or refusedRecheckMs have passed; then it is asked
   * for again quietly (`probing`), still refusing, until the store accepts it.
   */
  private refusedCheckpoint: { position: string; why: string; at: number; probing: boolean } | undefined;
  /** While a refused checkpoint is asked for again: accepted when the subscription delivers, or stays quiet this long. */
  private probeTimer: NodeJS.Timeout | null = null;
  /** What this instance is doing (also at /metrics and, when refusing, /readyz). */
  state: ProcessorState = 'stopped';

  constructor(private readonly options: CheckpointedOptions) {
    this.logger = new Logger(`processor:${options.name}`);
    this.leaseOptions = options.lease === undefined ? processorLeaseDefaults() : options.lease;
    this.clock = options.clock ?? (() => performance.now());
    this.lease =
      this.leaseOptions &&
      new ProcessorLease(
        options.name,
        this.leaseOptions,
        options.checkpoints,
        this.clock,
        this.logger,
        () => this.lostLease(),
        () => this.stopped,
      );
    this.saver = new CheckpointSaver(options.name, options.checkpoints, CHECKPOINT_EVERY_MS, this.logger, () =>
      this.lease?.lose('another replica holds it now (a checkpoint write was refused)'),
    );
  }

  /** Runs, or stands by, or refuses; resolves once it knows which (a free lease is taken at once: no delay for a single instance). */
  async start(): Promise<void> {
    this.stopped = false;
    this.firstAttempt = true;
    await this.attempt();
  }

  /** One try at running: the head check, the lease, then following the event store from the checkpoint. */
  private async attempt(): Promise<void> {
    if (this.stopped) return;
    if (this.lease && !this.lease.isHeld) {
      // At start and while refusing every replica looks, so that each is not ready, not only the holder.
      if ((this.state === 'stopped' || this.state === 'refusing') && !(await this.checkHead(await this.options.checkpoints.get(this.options.name)))) return;
      const taken = await this.lease.take(this.firstAttempt && this.leaseOptions!.seizeAtStart === true, () => !this.stopped);
      this.firstAttempt = false;
      this.failures = 0;
      if (this.stopped) return;
      if (!taken) {
        this.setState('standby');
        this.schedule(this.leaseOptions!.renewMs);
        return;
      }
    }
    await this.follow();
  }

  private async follow(): Promise<void> {
    const run = ++this.run;
    this.window = [];
    const from = await this.options.checkpoints.get(this.options.name);
    if (this.stopped || run !== this.run) return;
    if (!(await this.checkHead(from)) || this.stopped || run !== this.run) return;
    const probing = this.refusedCheckpoint?.probing === true;
    // Asking a refused checkpoint again: still refusing (not ready) until the store takes it.
    const accepted = () => {
      if (run !== this.run || this.refusedCheckpoint === undefined) return;
      this.clearProbe();
      this.refusedCheckpoint = undefined;
      this.logger.log(`the event store accepts checkpoint ${from} now: running`);
      this.setState('active');
    };
    if (probing) {
      this.probeTimer = setTimeout(accepted, PROBE_QUIET_MS);
      this.probeTimer.unref();
    } else {
      this.setState('active');
    }
    const concurrency = this.options.concurrency ?? 1;
    this.subscription = this.options.eventStore.subscribeToAll({
      fromPosition: from,
      streamPrefixes: this.options.streamPrefixes,
      onEvent: async (event) => {
        if (run !== this.run) return;
        if (probing) accepted();
        if (this.lease && !this.lease.valid)
          return this.lease.lose(`not renewed within ${this.leaseOptions!.ttlMs} ms by this process's clock (was it paused?)`);
        const entry = { position: event.position, done: false, finished: Promise.resolve() };
        entry.finished = withRequestId(event.metadata.requestId as string | undefined, () => this.options.handle(event)).then(() => {
          entry.done = true;
          this.handled(event, run);
        });
        this.window.push(entry);
        if (concurrency === 1) return entry.finished;
        // A failure ends this run (see failRun) rather than the subscription's loop.
        entry.finished.catch((error: Error) => this.failRun(run, error));
        // At most `concurrency` in hand, and a bounded window behind a slow one.
        const busy = () => this.window.length >= concurrency * WINDOW_PER_LANE || this.window.filter((e) => !e.done).length >= concurrency;
        while (run === this.run && busy()) await Promise.race(this.window.filter((e) => !e.done).map((e) => e.finished.catch(() => undefined)));
      },
      onError: (error) => {
        if (run !== this.run) return;
        if (error instanceof SubscriptionPositionRefusedError && from !== undefined && error.fromPosition === from) {
          // Asking again from the same checkpoint of the same store cannot succeed: refuse until either changes.
          this.endRun();
          void this.refuseCheckpoint(from, error).catch((e: Error) => this.restartAfterFailure(e));
          return;
        }
        this.restartAfterFailure(error);
      },
    });
  }

  /**
   * Whether the checkpoint is at or behind the event store's head. If ahead, following from it
   * would skip every event up to there: refuses (not ready, says why), lets the lease go, and
   * looks again every headRecheckMs, so that a reset of the checkpoint lets it run.
   */
  private async checkHead(checkpoint: string | undefined): Promise<boolean> {
    const refused = this.refusedCheckpoint;
    if (refused && checkpoint === refused.position) {
      if (this.clock() - refused.at < (this.options.refusedRecheckMs ?? 5 * 60_000)) return this.refuse(refused.why);
      // Time to ask the store again, quietly (see follow).
      refused.probing = true;
      return true;
    }
    this.refusedCheckpoint = undefined;
    if (checkpoint === undefined) return true;
    const head = await this.options.eventStore.lastPosition();
    if (!isAhead(checkpoint, head)) {
      if (this.state === 'refusing') this.logger.log(`checkpoint ${checkpoint} is no longer ahead of the event store's head ${head}: running`);
      return true;
    }
    return this.refuse(`checkpoint ${checkpoint} is ahead of the event store's head ${head ?? '(none: the event store is empty)'}`);
  }

  private async refuseCheckpoint(checkpoint: string, error: SubscriptionPositionRefusedError): Promise<void> {
    this.clearProbe();
    if (this.stopped) return;
    this.refusedCheckpoint = {
      position: checkpoint,
      why: `the event store refuses checkpoint ${checkpoint} (${error.message})`,
      at: this.clock(),
      probing: false,
    };
    await this.refuse(this.refusedCheckpoint.why);
  }

  private clearProbe(): void {
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
  }

  /** Not running from this checkpoint (not ready, says why, once), the lease let go; looks again every headRecheckMs. */
  private async refuse(problem: string): Promise<false> {
    if (this.state !== 'refusing') {
      this.logger.error(
        `refusing to run: ${problem}. Was the event store recreated or restored while the read store kept its checkpoints? ` +
          `Reset it: npm run ops -- processors reset ${this.options.name} --to-start (handle every event the event store holds) or --to-head (skip them)`,
      );
    }
    this.setState('refusing', `${problem}; reset it: npm run ops -- processors reset ${this.options.name} --to-start|--to-head`);
    await this.lease?.release();
    this.schedule(this.options.headRecheckMs ?? 5_000);
    return false;
  }

  /** No longer the active instance: stop following at once (what is in hand finishes unchecked), stand by. */
  private lostLease(): void {
    this.endRun();
    this.setState('standby');
    this.schedule(this.leaseOptions!.renewMs);
  }

  /** Ends the current run: its subscription closed, its handlers' results and unsaved checkpoint forgotten. */
  private endRun(): void {
    this.run++;
    const subscription = this.subscription;
    this.subscription = null;
    void subscription?.close().catch(() => undefined);
    this.window = [];
    this.saver.forget();
  }

  private setState(state: ProcessorState, problem?: string): void {
    this.state = state;
    reportProcessorState(this.options.name, state, problem);
  }

  /** The next attempt in `ms` (replacing any scheduled); an attempt that fails backs off. */
  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.attempt().catch((e: Error) => this.restartAfterFailure(e));
    }, ms);
    this.retryTimer.unref();
  }

  /** One more event handled: the checkpoint moves over every handled event at the front of the window. */
  private handled(event: RecordedEvent, run: number): void {
    if (run !== this.run) return;
    let position: string | null = null;
    while (this.window.length > 0 && this.window[0].done) position = this.window.shift()!.position;
    if (position !== null) this.saver.saveSoon(position, this.lease?.fence);
    this.failures = 0;
    const occurred = Date.parse(event.occurredAt);
    processorEvents.inc({ processor: this.options.name });
    processorLag.set({ processor: this.options.name }, Math.max(0, (Date.now() - occurred) / 1000));
    processorCheckpoint.set({ processor: this.options.name }, occurred / 1000);
  }

  /** A handler of a concurrent run failed: stop that run, and start again from the checkpoint. */
  private failRun(run: number, error: Error): void {
    if (run !== this.run || this.stopped) return;
    this.run++;
    const subscription = this.subscription;
    this.subscription = null;
    void subscription?.close();
    this.restartAfterFailure(error);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.clearProbe();
    this.lease?.stopRenewing();
    await this.subscription?.close();
    this.subscription = null;
    // Handlers still running finish first, so the checkpoint saved below covers them.
    await Promise.all(this.window.map((entry) => entry.finished.catch(() => undefined)));
    await this.saver.saveNow();
    // Let the lease go, so a replica takes over now rather than after the TTL (a rolling update).
    await this.lease?.release();
    this.setState('stopped');
  }

  private restartAfterFailure(error: Error): void {
    if (this.stopped) return;
    this.failures++;
    const delay = Math.min(30_000, 200 * 2 ** Math.min(this.failures, 8));
    this.logger.warn(`stopped on an error, restarting from the checkpoint in ${delay} ms: ${error.message}`);
    this.subscription = null;
    this.schedule(delay);
  }
}

/** Positions are decimal integers that grow with every append (the event store port's contract); null: an empty store. */
function isAhead(checkpoint: string, head: string | null): boolean {
  if (!/^\d+$/.test(checkpoint) || (head !== null && !/^\d+$/.test(head))) return false;
  return head === null || BigInt(checkpoint) > BigInt(head);
}
