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
  /** The live try that was started (DispatchAttemptStarted) and has no outcome yet, or null. */
  tryInFlight: { attempt: number; lookup: boolean } | null;
  /**
   * The last try ended without knowing whether the network created the campaign (a timeout, a
   * dropped connection, a 5xx to a create, a lookup that did not answer): the next try looks first.
   */
  outcomeUnknown: boolean;
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
  /**
   * A live try is about to call the network (`attempt`: the next one). Recorded before the call;
   * only one caller can start a given attempt, so two deliveries of the same work never both call.
   */
  | { type: 'StartAttempt'; attempt: number; now: string }
  /**
   * `reconciled`: the campaign was found at the network (made by an earlier try whose outcome was
   * lost) rather than created by this try; `duplicates`: other campaigns the lookup found with the
   * dispatch's marker (the oldest is `providerResourceId`).
   */
  | { type: 'RecordProviderSuccess'; attempt: number; providerResourceId: string; now: string; reconciled?: boolean; duplicates?: string[] }
  /** `outcomeUnknown`: the network may have created the campaign all the same; the next try looks for it first. */
  | { type: 'RecordProviderFailure'; attempt: number; error: DispatchError; now: string; outcomeUnknown?: boolean }
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

function requireAccepted(state: DispatchState): Dispatch {
  if (!exists(state)) throw new DispatchNotFound('no such dispatch');
  if (state.status !== 'accepted') throw new DispatchNotInProgress(`dispatch ${state.id} is ${state.status}`);
  return state;
}

/** An attempt that may start now: the next one, whoever asks first (a second start of it is stale). */
function requireNextAttempt(state: DispatchState, attempt: number): Dispatch {
  const dispatch = requireAccepted(state);
  if (attempt !== dispatch.attempts + 1) throw new StaleAttempt(`attempt ${attempt} after ${dispatch.attempts}`);
  return dispatch;
}

/**
 * An outcome must be of the try in flight (a live try, started first) or of the next provider
 * call (a sandbox try, or a live one that failed before it could start, e.g. its token could not
 * be refreshed); anything else was already recorded. The next call while a try is in flight means
 * that try was abandoned (its process died): `abandoned` says so.
 */
function requireOutcomeOf(state: DispatchState, attempt: number): { dispatch: Dispatch; abandoned: boolean } {
  const dispatch = requireAccepted(state);
  if (dispatch.tryInFlight?.attempt === attempt) return { dispatch, abandoned: false };
  if (attempt !== dispatch.attempts + 1) throw new StaleAttempt(`attempt ${attempt} after ${dispatch.attempts}`);
  return { dispatch, abandoned: dispatch.tryInFlight !== null };
}

/** Whether a campaign may exist that no recorded outcome names: a try in flight, or one whose outcome was lost. */
const mayHaveCreated = (dispatch: Dispatch): boolean => dispatch.outcomeUnknown || dispatch.tryInFlight !== null;
const unknownOutcome = (unknown: boolean): { outcomeUnknown?: true } => (unknown ? { outcomeUnknown: true } : {});

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
    case 'StartAttempt': {
      const dispatch = requireNextAttempt(state, command.attempt);
      return [event('DispatchAttemptStarted', { attempt: command.attempt, lookup: mayHaveCreated(dispatch), at: command.now })];
    }
    case 'RecordProviderSuccess': {
      const { abandoned } = requireOutcomeOf(state, command.attempt);
      // A success is only ever recorded for the try that made it; an abandoned try's campaign is found by the next one.
      if (abandoned) throw new StaleAttempt(`attempt ${command.attempt} was never started`);
      const duplicates = command.duplicates ?? [];
      return [
        event('DispatchCompleted', {
          providerResourceId: command.providerResourceId,
          attempt: command.attempt,
          completedAt: command.now,
          ...(command.reconciled ? { reconciled: true as const } : {}),
          ...(duplicates.length > 0
            ? {
                duplicateProviderResourceIds: duplicates,
                warning: `The network holds ${duplicates.length + 1} campaigns with this dispatch's marker; the oldest (${command.providerResourceId}) is the dispatch's, the others (${duplicates.join(', ')}) were not made by it and can be removed.`,
              }
            : {}),
        }),
      ];
    }
    case 'RecordProviderFailure': {
      const { dispatch, abandoned } = requireOutcomeOf(state, command.attempt);
      // A started try was counted when it started.
      const runAttempt = dispatch.tryInFlight?.attempt === command.attempt ? dispatch.attemptsThisRun : dispatch.attemptsThisRun + 1;
      const unknown = unknownOutcome(command.outcomeUnknown === true || abandoned);
      if (command.error.retryable && runAttempt < MAX_ATTEMPTS_PER_RUN) {
        return [event('DispatchAttemptFailed', { attempt: command.attempt, error: command.error, at: command.now, ...unknown })];
      }
      return [event('DispatchFailed', { error: command.error, attempt: command.attempt, failedAt: command.now, ...unknown })];
    }
    case 'RecordFailureBeforeTry': {
      // No call was made now, but a try before it (one in flight when its process died) may have created the campaign.
      const dispatch = requireNextAttempt(state, command.attempt);
      return [
        event('DispatchFailed', {
          error: { ...command.error, retryable: false },
          attempt: command.attempt - 1,
          failedAt: command.now,
          ...unknownOutcome(mayHaveCreated(dispatch)),
        }),
      ];
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
      tryInFlight: null,
      outcomeUnknown: false,
      idempotencyKey: d.idempotencyKey,
      createdAt: d.acceptedAt,
      updatedAt: d.acceptedAt,
      completedAt: null,
      failedAt: null,
    };
  }
  if (!exists(state)) return state;
  switch (event.type) {
    case 'DispatchAttemptStarted':
      return {
        ...state,
        attempts: event.data.attempt,
        attemptsThisRun: state.attemptsThisRun + 1,
        tryInFlight: { attempt: event.data.attempt, lookup: event.data.lookup },
        updatedAt: event.data.at,
      };
    case 'DispatchAttemptFailed':
      return { ...state, ...tryEnded(state, event.data.attempt, event.data.outcomeUnknown), updatedAt: event.data.at };
    case 'DispatchCompleted':
      return {
        ...state,
        ...tryEnded(state, event.data.attempt, undefined),
        status: 'completed',
        providerResourceId: event.data.providerResourceId,
        completedAt: event.data.completedAt,
        updatedAt: event.data.completedAt,
      };
    case 'DispatchFailed':
      return {
        ...state,
        ...tryEnded(state, event.data.attempt, event.data.outcomeUnknown),
        status: 'failed',
        error: event.data.error,
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

/** What an outcome changes of the attempt counters: a started try was counted when it started, one that started nothing (sandbox) now. */
function tryEnded(
  state: Dispatch,
  attempt: number,
  outcomeUnknown: true | undefined,
): Pick<Dispatch, 'attempts' | 'attemptsThisRun' | 'tryInFlight' | 'outcomeUnknown'> {
  const counted = state.tryInFlight?.attempt === attempt;
  return {
    attempts: attempt,
    attemptsThisRun: counted ? state.attemptsThisRun : state.attemptsThisRun + 1,
    tryInFlight: null,
    outcomeUnknown: outcomeUnknown === true,
  };
}

export const dispatchDecider: Decider<DispatchCommand, DispatchEvent, DispatchState> = {
  initialState: { status: 'none' },
  decide,
  evolve,
};
