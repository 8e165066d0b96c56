import { assertNever, Decider, DomainRuleViolation } from '@campaign-ops/decider';
import { CampaignSpec, Channel } from '@campaign-ops/channels';
import { DISPATCH_EVENTS, DispatchError, DispatchEvent, Mode } from './dispatch.events';

/** Transient provider errors are retried inside a dispatch up to this many provider calls. */
export const MAX_ATTEMPTS_PER_RUN = 5;
export const CREDITS_PER_DISPATCH = 1;

export type DispatchStatus = 'accepted' | 'completed' | 'failed';

export interface Dispatch {
  id: string;
  accountId: string;
  mode: Mode;
  status: DispatchStatus;
  channel: Channel;
  resourceType: 'campaign';
  action: 'create';
  campaign: CampaignSpec;
  connectionId: string | null;
  creditsCharged: number;
  providerResourceId: string | null;
  error: DispatchError | null;
  /** Provider calls over the dispatch's whole life. */
  attempts: number;
  /** Provider calls since it was last accepted (the budget for transient retries). */
  attemptsThisRun: number;
  idempotencyKey: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  failedAt: string | null;
}

export type DispatchState = { status: 'none' } | Dispatch;

export type DispatchCommand =
  | {
      type: 'CreateDispatch';
      dispatchId: string;
      accountId: string;
      mode: Mode;
      channel: Channel;
      campaign: CampaignSpec;
      connectionId: string | null;
      idempotencyKey: string | null;
      now: string;
    }
  | { type: 'RecordProviderSuccess'; attempt: number; providerResourceId: string; now: string }
  | { type: 'RecordProviderFailure'; attempt: number; error: DispatchError; now: string }
  /**
   * The launch cannot be tried at all (the budget's currency is not the ad account's, the
   * connection needs re-authentication): failed, final, with no provider call counted. `attempt`
   * is the try that was about to be made, so a stale message is told apart as for an outcome.
   */
  | { type: 'RecordFailureBeforeTry'; attempt: number; error: DispatchError; now: string }
  /** `connectionId`: the channel's connection now, when it is not the one the dispatch had (a replaced connection). */
  | { type: 'RetryDispatch'; requestId: string | null; now: string; connectionId?: string };

export class DispatchAlreadyExists extends DomainRuleViolation {
  readonly rule = 'dispatch_already_exists';
}
export class DispatchNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}
export class DispatchNotRetryable extends DomainRuleViolation {
  readonly rule = 'dispatch_not_retryable';
  constructor(readonly status: DispatchStatus) {
    super(`A dispatch can be retried only when it has failed; this one is ${status}.`);
  }
}
/** A provider outcome arrived for a dispatch that is not waiting for one (e.g. a redelivered message). */
export class DispatchNotInProgress extends DomainRuleViolation {
  readonly rule = 'dispatch_not_in_progress';
}
export class StaleAttempt extends DomainRuleViolation {
  readonly rule = 'stale_attempt';
}

const exists = (state: DispatchState): state is Dispatch => state.status !== 'none';

function requireInProgress(state: DispatchState, attempt: number): Dispatch {
  if (!exists(state)) throw new DispatchNotFound('no such dispatch');
  if (state.status !== 'accepted') throw new DispatchNotInProgress(`dispatch ${state.id} is ${state.status}`);
  // The outcome must be of the next provider call; anything else was already recorded.
  if (attempt !== state.attempts + 1) throw new StaleAttempt(`attempt ${attempt} after ${state.attempts}`);
  return state;
}

export function decide(command: DispatchCommand, state: DispatchState): DispatchEvent[] {
  const event = DISPATCH_EVENTS.event;
  switch (command.type) {
    case 'CreateDispatch': {
      if (exists(state)) throw new DispatchAlreadyExists(`dispatch ${command.dispatchId} exists`);
      return [
        event('DispatchAccepted', {
          dispatchId: command.dispatchId,
          accountId: command.accountId,
          mode: command.mode,
          channel: command.channel,
          resourceType: 'campaign',
          action: 'create',
          campaign: command.campaign,
          connectionId: command.connectionId,
          creditsCharged: CREDITS_PER_DISPATCH,
          idempotencyKey: command.idempotencyKey,
          acceptedAt: command.now,
        }),
      ];
    }
    case 'RecordProviderSuccess': {
      requireInProgress(state, command.attempt);
      return [event('DispatchCompleted', { providerResourceId: command.providerResourceId, attempt: command.attempt, completedAt: command.now })];
    }
    case 'RecordProviderFailure': {
      const dispatch = requireInProgress(state, command.attempt);
      const runAttempt = dispatch.attemptsThisRun + 1;
      if (command.error.retryable && runAttempt < MAX_ATTEMPTS_PER_RUN) {
        return [event('DispatchAttemptFailed', { attempt: command.attempt, error: command.error, at: command.now })];
      }
      return [event('DispatchFailed', { error: command.error, attempt: command.attempt, failedAt: command.now })];
    }
    case 'RecordFailureBeforeTry': {
      requireInProgress(state, command.attempt);
      return [event('DispatchFailed', { error: { ...command.error, retryable: false }, attempt: command.attempt - 1, failedAt: command.now })];
    }
    case 'RetryDispatch': {
      if (!exists(state)) throw new DispatchNotFound('no such dispatch');
      if (state.status !== 'failed') throw new DispatchNotRetryable(state.status);
      const moved = command.connectionId !== undefined && command.connectionId !== state.connectionId;
      return [event('DispatchRetried', { retriedAt: command.now, requestId: command.requestId, ...(moved ? { connectionId: command.connectionId } : {}) })];
    }
    default:
      return assertNever(command);
  }
}

export function evolve(state: DispatchState, event: DispatchEvent): DispatchState {
  if (event.type === 'DispatchAccepted') {
    const d = event.data;
    return {
      id: d.dispatchId,
      accountId: d.accountId,
      mode: d.mode,
      status: 'accepted',
      channel: d.channel,
      resourceType: d.resourceType,
      action: d.action,
      campaign: d.campaign,
      connectionId: d.connectionId,
      creditsCharged: d.creditsCharged,
      providerResourceId: null,
      error: null,
      attempts: 0,
      attemptsThisRun: 0,
      idempotencyKey: d.idempotencyKey,
      createdAt: d.acceptedAt,
      updatedAt: d.acceptedAt,
      completedAt: null,
      failedAt: null,
    };
  }
  if (!exists(state)) return state;
  switch (event.type) {
    case 'DispatchAttemptFailed':
      return { ...state, attempts: event.data.attempt, attemptsThisRun: state.attemptsThisRun + 1, updatedAt: event.data.at };
    case 'DispatchCompleted':
      return {
        ...state,
        status: 'completed',
        providerResourceId: event.data.providerResourceId,
        attempts: event.data.attempt,
        attemptsThisRun: state.attemptsThisRun + 1,
        completedAt: event.data.completedAt,
        updatedAt: event.data.completedAt,
      };
    case 'DispatchFailed':
      return {
        ...state,
        status: 'failed',
        error: event.data.error,
        attempts: event.data.attempt,
        attemptsThisRun: state.attemptsThisRun + 1,
        failedAt: event.data.failedAt,
        updatedAt: event.data.failedAt,
      };
    case 'DispatchRetried':
      // A retry starts a new run with a fresh budget of attempts; the old error is history now.
      return {
        ...state,
        status: 'accepted',
        error: null,
        failedAt: null,
        attemptsThisRun: 0,
        connectionId: event.data.connectionId ?? state.connectionId,
        updatedAt: event.data.retriedAt,
      };
    default:
      return assertNever(event);
  }
}

export const dispatchDecider: Decider<DispatchCommand, DispatchEvent, DispatchState> = {
  initialState: { status: 'none' },
  decide,
  evolve,
};
