import { Inject, Injectable, Logger } from '@nestjs/common';
import { ChannelProvider } from '@campaign-ops/channels';
import { DomainRuleViolation } from '@campaign-ops/decider';
import { HandlerOutcome } from '@campaign-ops/bus';
import { Dispatch, DispatchCommand, DispatchNotInProgress, DispatchState, StaleAttempt } from '@campaign-ops/dispatch-domain';
import { Known } from '@campaign-ops/event-sourcing';
import { CONFIG, dispatchesExecuting, ServiceConfig } from '@campaign-ops/service-runtime';
import { DispatchStore } from './dispatch-store';
import { RelayedEvent, WORK_EVENT_TYPES } from './dispatch-relay';
import { classify, LaunchOutcome, LiveLaunches } from './live-launches';

/** The simulator that runs test-key dispatches (docs/api.md#dispatches-and-retries, "Sandbox"). */
export const SANDBOX_PROVIDER = Symbol('SANDBOX_PROVIDER');

/** Rounds and pause (growing: 500 ms, 1 s, 1.5 s, 2 s) of recording an outcome before the message goes back. */
const RECORD_ROUNDS = 5;
const RECORD_PAUSE_MS = 500;

/**
 * What the executor takes: a relayed work event, or one handed to the bus to wait until
 * `notBefore` (epoch ms) before its next try (a retry of work first run in the relay's hand).
 */
export type WorkMessage = RelayedEvent & { notBefore?: number };

/** What DispatchExecutor.run answers when the state it ran on is out of date. */
const OUT_OF_DATE = Symbol('out of date');

/** Waits between transient provider errors within one dispatch. */
export const attemptBackoffMs = (attempt: number): number => Math.min(30_000, 500 * 2 ** (attempt - 1));

/**
 * Runs accepted dispatches against their channel (the simulator for test keys, the ad network
 * for live ones) and records the outcome. It decides from the stream, not from the message, so a
 * redelivered or stale message does nothing twice.
 */
@Injectable()
export class DispatchExecutor {
  private readonly logger = new Logger('dispatch-executor');

  constructor(
    private readonly store: DispatchStore,
    @Inject(SANDBOX_PROVIDER) private readonly sandbox: ChannelProvider,
    private readonly live: LiveLaunches,
    @Inject(CONFIG) private readonly config: Pick<ServiceConfig, 'channelRetryMaxWaitMs'>,
  ) {}

  /**
   * Runs the work of `event` on the stream's latest state, or on `known` (the stream as of the
   * event, handed by the relay: not read again; the outcome's append still expects its revision,
   * so a stream that moved on meanwhile is read and decided again).
   *
   * A test-key dispatch's acceptance handed without `known` (over the bus) is, at revision 0, the
   * whole stream as it was accepted: it is run on that first, unread. If the stream has moved on
   * since (a redelivery after a failed try, a replay of a parked message), the outcome's append
   * conflicts and the decision on the stream as it is refuses that try as stale: the work is then
   * run again on the stream as read, as it always was. The simulator creates nothing twice (its id
   * is the dispatch's own). A live dispatch is always read: its try starts from the stream.
   */
  async handle(event: WorkMessage, known?: Known<DispatchState>): Promise<HandlerOutcome> {
    if (!WORK_EVENT_TYPES.has(event.type)) return;
    const waitMs = event.notBefore === undefined ? 0 : event.notBefore - Date.now();
    if (waitMs > 0) return { retryInMs: waitMs };
    if (!known) {
      const accepted = event.notBefore === undefined ? this.store.stateAtFirstEvent(event) : undefined;
      if (accepted?.state.status === 'accepted' && accepted.state.mode === 'test') {
        const outcome = await this.run(event, accepted, true);
        if (outcome !== OUT_OF_DATE) return outcome;
      }
    }
    const outcome = await this.run(event, known ?? (await this.store.stateOf(event.streamId)).loaded, false);
    return outcome === OUT_OF_DATE ? undefined : outcome;
  }

  /**
   * The work on `known`. OUT_OF_DATE when the try was already taken or recorded by another
   * delivery, or (`guessed`: `known` was not read) the stream has moved on past `known`.
   */
  private async run(event: WorkMessage, known: Known<DispatchState>, guessed: boolean): Promise<HandlerOutcome | typeof OUT_OF_DATE> {
    const { state } = known;
    if (state.status !== 'accepted') return;

    const attempt = state.attempts + 1;
    const metadata = { accountId: state.accountId, mode: state.mode, requestId: (event.metadata.requestId as string | undefined) ?? null };
    dispatchesExecuting.inc();
    const outcome = await (
      state.mode === 'live' ? this.live.launch(state, () => this.startTry(event.streamId, attempt, metadata)) : this.simulate(state, attempt)
    ).finally(() => dispatchesExecuting.dec());
    // Another delivery of this work started the try first: it records the outcome.
    if (outcome.kind === 'taken') return OUT_OF_DATE;
    const command = toCommand(outcome, attempt, new Date().toISOString());
    try {
      // A sandbox run appended nothing since the stream was read: its outcome is decided on that
      // read (the append still expects its revision). A live try appended its start: read again.
      const decided = await this.record(event.streamId, command, metadata, state.mode === 'live' ? undefined : known);
      await this.store.showDecided(decided);
      const last = decided.recorded[decided.recorded.length - 1];
      // A transient failure: wait (the network's delay when it named one), then this message comes back and the next try runs.
      if (last?.type === 'DispatchAttemptFailed') {
        const delay = outcome.kind === 'failed' && outcome.retryAfterMs !== null ? outcome.retryAfterMs : attemptBackoffMs(attempt);
        // Bounded by CHANNEL_RETRY_MAX_WAIT: a network may name hours (LinkedIn: until midnight UTC).
        return { retryInMs: Math.min(this.config.channelRetryMaxWaitMs, Math.max(0, delay)) };
      }
    } catch (error) {
      // Another delivery of this work recorded the outcome first (or, guessed, the stream is past this try).
      if (error instanceof StaleAttempt || error instanceof DispatchNotInProgress) return guessed ? OUT_OF_DATE : undefined;
      throw error;
    }
  }

  /** Whether the work of this dispatch is done at once (a test key, on a simulator answer that does not wait): what may run in the relay's hand. */
  answersAtOnce(state: DispatchState): boolean {
    return state.status === 'accepted' && state.mode === 'test' && this.sandbox.answersAtOnce?.({ campaign: state.campaign }) === true;
  }

  /**
   * Records that a live try starts, before the network is called: from then on a lost outcome is
   * known to be one, and the next try looks for the campaign before it creates one. Only one
   * delivery can start a given attempt (the decider refuses a second start as stale).
   */
  private async startTry(streamId: string, attempt: number, metadata: Record<string, unknown>): Promise<{ lookup: boolean } | null> {
    try {
      const { state } = await this.store.repository.execute(streamId, { type: 'StartAttempt', attempt, now: new Date().toISOString() }, metadata);
      return { lookup: state.status === 'accepted' && state.tryInFlight !== null && state.tryInFlight.lookup };
    } catch (error) {
      if (error instanceof StaleAttempt || error instanceof DispatchNotInProgress) return null;
      throw error;
    }
  }

  /**
   * Records a try's outcome. The network has been called by now, so a store hiccup must not send
   * the message back (its redelivery would call the network again and could create the campaign
   * twice): the append is retried here first, a few times over about five seconds.
   */
  private async record(streamId: string, command: DispatchCommand, metadata: Record<string, unknown>, known?: Known<DispatchState>) {
    for (let round = 1; ; round++) {
      try {
        return await this.store.repository.execute(streamId, command, metadata, round === 1 ? known : undefined);
      } catch (error) {
        if (error instanceof DomainRuleViolation || round >= RECORD_ROUNDS) throw error;
        this.logger.warn(`recording the outcome of ${streamId} failed (${(error as Error).message}); trying again`);
        await new Promise((resolve) => setTimeout(resolve, RECORD_PAUSE_MS * round));
      }
    }
  }

  /** A test-key dispatch on the simulator; `[sandbox:reauth]` moves the channel's sandbox connection too. */
  private async simulate(dispatch: Dispatch, attempt: number): Promise<LaunchOutcome> {
    try {
      const created = await this.sandbox.createCampaign({ dispatchId: dispatch.id, channel: dispatch.channel, campaign: dispatch.campaign, attempt });
      // The simulator's id is the dispatch's own, whatever happened before: nothing to look for.
      return { kind: 'created', providerResourceId: created.providerResourceId, reconciled: false, duplicates: [] };
    } catch (error) {
      const outcome = classify(error, this.logger);
      if (outcome.kind === 'failed' && outcome.error.code === 'connection_reauth_required') await this.live.reportReauthRequired(dispatch, 'sandbox_reauth');
      return outcome;
    }
  }
}

function toCommand(outcome: Exclude<LaunchOutcome, { kind: 'taken' }>, attempt: number, now: string): DispatchCommand {
  if (outcome.kind === 'created') {
    const { providerResourceId, reconciled, duplicates } = outcome;
    return {
      type: 'RecordProviderSuccess',
      attempt,
      providerResourceId,
      now,
      ...(reconciled ? { reconciled } : {}),
      ...(duplicates.length > 0 ? { duplicates } : {}),
    };
  }
  if (!outcome.tried && !outcome.error.retryable) return { type: 'RecordFailureBeforeTry', attempt, error: outcome.error, now };
  return { type: 'RecordProviderFailure', attempt, error: outcome.error, now, ...(outcome.outcomeUnknown ? { outcomeUnknown: true } : {}) };
}
