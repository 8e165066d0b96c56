import { join } from 'node:path';
import { fold } from '@campaign-ops/decider';
import { describeEventFixtures, fixtureEvent } from '@campaign-ops/testing/decider';
import { CREDIT_LEDGER_EVENTS, creditLedgerDecider, CreditLedgerEvent } from './credit-ledger.decider';
import { dispatchDecider, DispatchCommand, DispatchState } from './dispatch.decider';
import { DISPATCH_EVENTS, DispatchEvent } from './dispatch.events';

const T = '2026-11-25T04:20:00.000Z';
const dispatches = join(__dirname, 'fixtures/events/dispatch');
const stored = (name: string) => fixtureEvent(DISPATCH_EVENTS, dispatches, name);
const accepted = stored('DispatchAccepted.v1');
const failed = stored('DispatchFailed.v1');
const started = stored('DispatchAttemptStarted.v1');
const error = { code: 'provider_unavailable', message: '503', provider_code: 'HTTP_503', retryable: true } as const;
const decided = (history: DispatchEvent[], command: DispatchCommand) => dispatchDecider.decide(command, fold(dispatchDecider, history))[0];

describeEventFixtures<DispatchEvent, DispatchState>({
  versions: DISPATCH_EVENTS,
  dir: dispatches,
  evolve: dispatchDecider.evolve,
  stateBefore: (type) => fold(dispatchDecider, type === 'DispatchAccepted' ? [] : type === 'DispatchRetried' ? [accepted, failed] : [accepted]),
  written: {
    'DispatchAccepted.v1': decided([], { type: 'CreateDispatch', ...(accepted.data as Extract<DispatchEvent, { type: 'DispatchAccepted' }>['data']), now: T }),
    'DispatchAttemptStarted.v1': decided([accepted], { type: 'StartAttempt', attempt: 1, now: T }),
    'DispatchAttemptStarted.v1.lookup': decided([accepted, started], { type: 'StartAttempt', attempt: 2, now: T }),
    'DispatchAttemptFailed.v1': decided([accepted], { type: 'RecordProviderFailure', attempt: 1, error, now: T }),
    'DispatchAttemptFailed.v1.outcome-unknown': decided([accepted, started], {
      type: 'RecordProviderFailure',
      attempt: 1,
      error,
      now: T,
      outcomeUnknown: true,
    }),
    'DispatchCompleted.v1.reconciled': decided([accepted, started], {
      type: 'RecordProviderSuccess',
      attempt: 1,
      providerResourceId: 'p_1',
      now: T,
      reconciled: true,
    }),
    'DispatchCompleted.v1.reconciled-duplicates': decided([accepted, started], {
      type: 'RecordProviderSuccess',
      attempt: 1,
      providerResourceId: 'p_1',
      now: T,
      reconciled: true,
      duplicates: ['p_2'],
    }),
    'DispatchFailed.v1.outcome-unknown': decided([accepted, started], {
      type: 'RecordProviderFailure',
      attempt: 1,
      error: { ...error, retryable: false },
      now: T,
      outcomeUnknown: true,
    }),
    'DispatchCompleted.v1': decided([accepted], { type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'p_1', now: T }),
    'DispatchFailed.v1': decided([accepted], { type: 'RecordProviderFailure', attempt: 1, error: { ...error, retryable: false }, now: T }),
    'DispatchRetried.v1': decided([accepted, failed], { type: 'RetryDispatch', requestId: 'req_1', now: T }),
    'DispatchRetried.v1.moved-connection': decided([accepted, failed], { type: 'RetryDispatch', requestId: 'req_1', connectionId: 'con_new', now: T }),
  },
});

const ledgers = join(__dirname, 'fixtures/events/credit-ledger');
const ledger = creditLedgerDecider('acct_1', 'live');
const granted = fixtureEvent(CREDIT_LEDGER_EVENTS, ledgers, 'CreditsGranted.v1');
const charged = fixtureEvent(CREDIT_LEDGER_EVENTS, ledgers, 'DispatchCharged.v1') as Extract<CreditLedgerEvent, { type: 'DispatchCharged' }>;

describeEventFixtures({
  versions: CREDIT_LEDGER_EVENTS,
  dir: ledgers,
  evolve: ledger.evolve,
  stateBefore: (type) => fold(ledger, type === 'DispatchCharged' ? [granted] : []),
  written: {
    'CreditsGranted.v1': ledger.decide({ type: 'GrantCredits', grantId: 'g_1', amount: 10, now: T }, ledger.initialState)[0],
    'DispatchCharged.v1': ledger.decide({ type: 'ChargeForDispatch', dispatch: charged.data.dispatch, now: T }, fold(ledger, [granted]))[0],
  },
});
