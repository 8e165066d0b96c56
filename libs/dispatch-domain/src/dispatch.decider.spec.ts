import { specFor } from '@campaign-ops/testing/decider';
import {
  DispatchAlreadyExists,
  DispatchCommand,
  dispatchDecider,
  DispatchNotFound,
  DispatchNotInProgress,
  DispatchNotRetryable,
  MAX_ATTEMPTS_PER_RUN,
  StaleAttempt,
} from './dispatch.decider';
import { DispatchError, DispatchEvent } from './dispatch.events';
import { toNotification } from './dispatch.views';

const given = specFor(dispatchDecider);
const T0 = '2026-11-22T10:00:00.000Z';
const T1 = '2026-11-22T10:00:01.000Z';
const campaign = {
  name: 'Spring',
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' as const },
  schedule: { start_at: '2026-12-01T00:00:00.000Z', timezone: 'Europe/Berlin' },
};

const create: DispatchCommand = {
  type: 'CreateDispatch',
  dispatchId: 'dsp_1',
  accountId: 'acct_1',
  mode: 'test',
  channel: 'meta_ads',
  campaign,
  connectionId: null,
  idempotencyKey: 'k1',
  now: T0,
};
const accepted: DispatchEvent = dispatchDecider.decide(create, dispatchDecider.initialState)[0];
const transient: DispatchError = { code: 'provider_unavailable', message: '503', provider_code: 'HTTP_503', retryable: true };
const invalid: DispatchError = { code: 'provider_validation_failed', message: 'bad', provider_code: 'X', retryable: false };
const attemptFailed = (attempt: number): DispatchEvent => ({ type: 'DispatchAttemptFailed', version: 1, data: { attempt, error: transient, at: T1 } });
const completed: DispatchEvent = { type: 'DispatchCompleted', version: 1, data: { providerResourceId: 'sbx_meta_ads_1', attempt: 1, completedAt: T1 } };
const failed: DispatchEvent = { type: 'DispatchFailed', version: 1, data: { error: invalid, attempt: 1, failedAt: T1 } };
const retried: DispatchEvent = { type: 'DispatchRetried', version: 1, data: { retriedAt: T1, requestId: 'req_1' } };

describe('dispatch decider', () => {
  it('accepts a new dispatch, charging one credit', () =>
    given()
      .when(create)
      .then([
        {
          type: 'DispatchAccepted',
          version: 1,
          data: {
            dispatchId: 'dsp_1',
            accountId: 'acct_1',
            mode: 'test',
            channel: 'meta_ads',
            resourceType: 'campaign',
            action: 'create',
            campaign,
            connectionId: null,
            creditsCharged: 1,
            idempotencyKey: 'k1',
            acceptedAt: T0,
          },
        },
      ]));

  it('refuses to create a dispatch twice', () => given(accepted).when(create).thenThrows(DispatchAlreadyExists));

  it('completes on the provider success of the next attempt', () =>
    given(accepted).when({ type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'sbx_meta_ads_1', now: T1 }).then([completed]));

  it('ignores an outcome of an attempt already recorded', () =>
    given(accepted, attemptFailed(1)).when({ type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'x', now: T1 }).thenThrows(StaleAttempt));

  it('refuses a provider outcome once the dispatch has completed', () =>
    given(accepted, completed).when({ type: 'RecordProviderSuccess', attempt: 2, providerResourceId: 'x', now: T1 }).thenThrows(DispatchNotInProgress));

  it('keeps trying after a transient error', () =>
    given(accepted)
      .when({ type: 'RecordProviderFailure', attempt: 1, error: transient, now: T1 })
      .then([attemptFailed(1)]));

  it(`fails, retryable, after ${MAX_ATTEMPTS_PER_RUN} transient errors`, () =>
    given(accepted, attemptFailed(1), attemptFailed(2), attemptFailed(3), attemptFailed(4))
      .when({ type: 'RecordProviderFailure', attempt: 5, error: transient, now: T1 })
      .then([{ type: 'DispatchFailed', version: 1, data: { error: transient, attempt: 5, failedAt: T1 } }]));

  it('fails at once on a validation error', () => given(accepted).when({ type: 'RecordProviderFailure', attempt: 1, error: invalid, now: T1 }).then([failed]));

  describe('a failure before any try (currency mismatch, connection needing re-authentication)', () => {
    const mismatch: DispatchError = {
      code: 'provider_validation_failed',
      message: 'EUR budget, USD account',
      provider_code: 'currency_mismatch',
      retryable: false,
    };
    const failedBefore = (attempt: number, error: DispatchError = mismatch): DispatchEvent => ({
      type: 'DispatchFailed',
      version: 1,
      data: { error, attempt, failedAt: T1 },
    });

    it('fails at once, counting no try', () =>
      given(accepted)
        .when({ type: 'RecordFailureBeforeTry', attempt: 1, error: mismatch, now: T1 })
        .then([failedBefore(0)]));

    it('keeps the tries made before, and is never retryable', () =>
      given(accepted, attemptFailed(1), attemptFailed(2))
        .when({ type: 'RecordFailureBeforeTry', attempt: 3, error: { ...transient, code: 'connection_reauth_required' }, now: T1 })
        .then([failedBefore(2, { ...transient, code: 'connection_reauth_required', retryable: false })]));

    it('leaves attempts at 0 on the dispatch', () => {
      const state = [accepted, failedBefore(0)].reduce(dispatchDecider.evolve, dispatchDecider.initialState);
      expect(state).toMatchObject({ status: 'failed', attempts: 0, error: mismatch, failedAt: T1 });
    });

    it('is refused for a try already recorded, and once the dispatch has ended', () => {
      given(accepted, attemptFailed(1)).when({ type: 'RecordFailureBeforeTry', attempt: 1, error: mismatch, now: T1 }).thenThrows(StaleAttempt);
      given(accepted, completed).when({ type: 'RecordFailureBeforeTry', attempt: 2, error: mismatch, now: T1 }).thenThrows(DispatchNotInProgress);
      given().when({ type: 'RecordFailureBeforeTry', attempt: 1, error: mismatch, now: T1 }).thenThrows(DispatchNotFound);
    });
  });

  it('retries a failed dispatch', () => given(accepted, failed).when({ type: 'RetryDispatch', requestId: 'req_1', now: T1 }).then([retried]));

  it('refuses to retry a completed dispatch', () =>
    given(accepted, completed).when({ type: 'RetryDispatch', requestId: null, now: T1 }).thenThrows(DispatchNotRetryable));

  it('refuses to retry an accepted dispatch', () => given(accepted).when({ type: 'RetryDispatch', requestId: null, now: T1 }).thenThrows(DispatchNotRetryable));

  describe('retrying on a replaced connection', () => {
    const live = { ...accepted, data: { ...accepted.data, mode: 'live', connectionId: 'con_1' } } as DispatchEvent;
    it('runs the new run on the connection that replaced the one it had', () => {
      const moved: DispatchEvent = { type: 'DispatchRetried', version: 1, data: { retriedAt: T1, requestId: 'req_1', connectionId: 'con_2' } };
      given(live, failed).when({ type: 'RetryDispatch', requestId: 'req_1', now: T1, connectionId: 'con_2' }).then([moved]);
      expect(given(live, failed, moved).state()).toMatchObject({ status: 'accepted', connectionId: 'con_2' });
    });
    it('records no connection when it is the one the dispatch has', () =>
      given(live, failed).when({ type: 'RetryDispatch', requestId: 'req_1', now: T1, connectionId: 'con_1' }).then([retried]));
    it('keeps its connection when the retry names none', () => expect(given(live, failed, retried).state()).toMatchObject({ connectionId: 'con_1' }));
    it('writes no connection field at all when the retry names none (a sandbox dispatch has none)', () => {
      const [event] = dispatchDecider.decide({ type: 'RetryDispatch', requestId: null, now: T1 }, given(accepted, failed).state());
      expect(Object.keys(event.data)).toEqual(['retriedAt', 'requestId']);
    });
  });

  it('gives a retried dispatch a fresh budget of attempts and counts every call', () => {
    const state = given(accepted, attemptFailed(1), failed, retried).state();
    expect(state).toMatchObject({ status: 'accepted', attempts: 1, attemptsThisRun: 0, error: null, failedAt: null });
    given(accepted, failed, retried)
      .when({ type: 'RecordProviderSuccess', attempt: 2, providerResourceId: 'p', now: T1 })
      .then([{ type: 'DispatchCompleted', version: 1, data: { providerResourceId: 'p', attempt: 2, completedAt: T1 } }]);
  });

  it('counts attempts: a transient error then success is two', () => {
    const state = given(accepted, attemptFailed(1), { ...completed, data: { ...completed.data, attempt: 2 } } as DispatchEvent).state();
    expect(state).toMatchObject({ status: 'completed', attempts: 2, providerResourceId: 'sbx_meta_ads_1' });
  });

  it('notifies partners of every transition, never of a transient attempt', () => {
    const after = given(accepted, completed).state();
    if (after.status === 'none') throw new Error('no dispatch');
    expect(toNotification(completed, after)).toEqual({
      event: 'dispatch.completed',
      data: {
        dispatch_id: 'dsp_1',
        channel: 'meta_ads',
        status: 'completed',
        resource_type: 'campaign',
        action: 'create',
        environment: 'sandbox',
        credits_charged: 1,
        provider_resource_id: 'sbx_meta_ads_1',
      },
    });
    expect(toNotification(attemptFailed(1), after)).toBeNull();
    expect(toNotification(retried, after)?.event).toBe('dispatch.accepted');
  });

  it.each<[string, DispatchEvent[], DispatchCommand, string, string]>([
    ['a second creation', [accepted], create, 'dispatch_already_exists', 'dispatch dsp_1 exists'],
    [
      'an outcome for no dispatch',
      [],
      { type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'x', now: T1 } as DispatchCommand,
      'resource_missing',
      'no such dispatch',
    ],
    ['a retry of no dispatch', [], { type: 'RetryDispatch', requestId: null, now: T1 }, 'resource_missing', 'no such dispatch'],
    [
      'an outcome after completion',
      [accepted, completed],
      { type: 'RecordProviderFailure', attempt: 2, error: invalid, now: T1 },
      'dispatch_not_in_progress',
      'dispatch dsp_1 is completed',
    ],
    [
      'an outcome of an attempt already recorded',
      [accepted, attemptFailed(1)],
      { type: 'RecordProviderFailure', attempt: 1, error: invalid, now: T1 },
      'stale_attempt',
      'attempt 1 after 1',
    ],
    [
      'a retry of a completed dispatch',
      [accepted, completed],
      { type: 'RetryDispatch', requestId: null, now: T1 },
      'dispatch_not_retryable',
      'A dispatch can be retried only when it has failed; this one is completed.',
    ],
  ])('names the rule %s breaks, for the service to answer', (_, history, command, rule, message) => {
    let error: (Error & { rule?: string }) | undefined;
    try {
      given(...history)
        .when(command)
        .events();
    } catch (caught) {
      error = caught as Error & { rule?: string };
    }
    expect([error?.rule, error?.message]).toEqual([rule, message]);
  });

  it('finds no dispatch to retry before it exists', () => given().when({ type: 'RetryDispatch', requestId: null, now: T1 }).thenThrows(DispatchNotFound));

  it('counts the calls of the current run, whatever their outcome', () => {
    expect(given(accepted, attemptFailed(1), attemptFailed(2)).state()).toMatchObject({ attempts: 2, attemptsThisRun: 2 });
    expect(given(accepted, attemptFailed(1), { ...completed, data: { ...completed.data, attempt: 2 } } as DispatchEvent).state()).toMatchObject({
      attempts: 2,
      attemptsThisRun: 2,
    });
    expect(given(accepted, attemptFailed(1), { ...failed, data: { ...failed.data, attempt: 2 } } as DispatchEvent).state()).toMatchObject({
      attempts: 2,
      attemptsThisRun: 2,
    });
  });
  describe('at most one campaign per dispatch: a live try is started before the network is called', () => {
    const live = { ...accepted, data: { ...accepted.data, mode: 'live', connectionId: 'con_1' } } as DispatchEvent;
    const started = (attempt: number, lookup = false): DispatchEvent => ({ type: 'DispatchAttemptStarted', version: 1, data: { attempt, lookup, at: T1 } });
    const unknownFailure = (attempt: number): DispatchEvent => ({
      type: 'DispatchAttemptFailed',
      version: 1,
      data: { attempt, error: transient, at: T1, outcomeUnknown: true },
    });
    const start = (attempt: number): DispatchCommand => ({ type: 'StartAttempt', attempt, now: T1 });

    it('starts the next try, without a lookup when no earlier try may have created the campaign', () =>
      given(live)
        .when(start(1))
        .then([started(1)]));

    it('lets only one caller start an attempt: a second start of it is stale', () => given(live, started(1)).when(start(1)).thenThrows(StaleAttempt));

    it('counts a started try at once, and once only when its outcome follows', () => {
      expect(given(live, started(1)).state()).toMatchObject({ attempts: 1, attemptsThisRun: 1, tryInFlight: { attempt: 1, lookup: false } });
      expect(given(live, started(1), attemptFailed(1)).state()).toMatchObject({ attempts: 1, attemptsThisRun: 1, tryInFlight: null, outcomeUnknown: false });
    });

    it('looks first when a try was started and never finished (the process died during it)', () =>
      given(live, started(1))
        .when(start(2))
        .then([started(2, true)]));

    it('looks first after a try whose outcome is unknown (a timeout, a dropped connection, a 5xx to a create)', () =>
      given(live, started(1), unknownFailure(1))
        .when(start(2))
        .then([started(2, true)]));

    it('creates without looking after a try that failed for sure', () =>
      given(live, started(1), attemptFailed(1))
        .when(start(2))
        .then([started(2)]));

    it('records an unknown outcome as such, and keeps trying', () =>
      given(live, started(1))
        .when({ type: 'RecordProviderFailure', attempt: 1, error: transient, now: T1, outcomeUnknown: true })
        .then([unknownFailure(1)]));

    it('takes only the outcome of the try in flight', () => {
      given(live, started(1))
        .when({ type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'p', now: T1 })
        .then([{ type: 'DispatchCompleted', version: 1, data: { providerResourceId: 'p', attempt: 1, completedAt: T1 } }]);
      given(live, started(1), started(2, true)).when({ type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'p', now: T1 }).thenThrows(StaleAttempt);
      given(live, started(1), started(2, true), attemptFailed(2))
        .when({ type: 'RecordProviderFailure', attempt: 2, error: transient, now: T1 })
        .thenThrows(StaleAttempt);
    });

    it('completes with the campaign a lookup found, marked reconciled in the history', () =>
      given(live, started(1), unknownFailure(1), started(2, true))
        .when({ type: 'RecordProviderSuccess', attempt: 2, providerResourceId: 'p_1', now: T1, reconciled: true })
        .then([{ type: 'DispatchCompleted', version: 1, data: { providerResourceId: 'p_1', attempt: 2, completedAt: T1, reconciled: true } }]));

    it('names the other campaigns a lookup found, as a warning in the history', () => {
      const [completedEvent] = given(live, started(1, true))
        .when({ type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'p_1', now: T1, reconciled: true, duplicates: ['p_2', 'p_3'] })
        .events();
      expect(completedEvent.data).toEqual({
        providerResourceId: 'p_1',
        attempt: 1,
        completedAt: T1,
        reconciled: true,
        duplicateProviderResourceIds: ['p_2', 'p_3'],
        warning: expect.stringMatching(/3 campaigns .*oldest \(p_1\).*p_2, p_3/),
      });
    });

    it(`fails after ${MAX_ATTEMPTS_PER_RUN} started tries of unknown outcome, and a retry of it looks first`, () => {
      const history = [
        live,
        started(1),
        unknownFailure(1),
        started(2, true),
        unknownFailure(2),
        started(3, true),
        unknownFailure(3),
        started(4, true),
        unknownFailure(4),
        started(5, true),
      ];
      const [failedUnknown] = given(...history)
        .when({ type: 'RecordProviderFailure', attempt: 5, error: transient, now: T1, outcomeUnknown: true })
        .events();
      expect(failedUnknown).toEqual({ type: 'DispatchFailed', version: 1, data: { error: transient, attempt: 5, failedAt: T1, outcomeUnknown: true } });
      given(...history, failedUnknown, retried)
        .when(start(6))
        .then([started(6, true)]);
    });

    it('forgets the doubt once a try has looked and failed for sure, or a retry follows a sure failure', () => {
      given(live, started(1), unknownFailure(1), started(2, true), attemptFailed(2))
        .when(start(3))
        .then([started(3)]);
      given(live, started(1), failed, retried)
        .when(start(2))
        .then([started(2)]);
    });

    it('carries the doubt of a try in flight into a failure before the next try (after a restart, the currency no longer matches)', () =>
      given(live, started(1))
        .when({ type: 'RecordFailureBeforeTry', attempt: 2, error: invalid, now: T1 })
        .then([{ type: 'DispatchFailed', version: 1, data: { error: invalid, attempt: 1, failedAt: T1, outcomeUnknown: true } }]));

    it('takes a failure of the next call while a try of a dead process is in flight, keeping the doubt (its token could not be refreshed after the restart)', () =>
      given(live, started(1))
        .when({ type: 'RecordProviderFailure', attempt: 2, error: transient, now: T1 })
        .then([{ type: 'DispatchAttemptFailed', version: 1, data: { attempt: 2, error: transient, at: T1, outcomeUnknown: true } }]));

    it('records no success for a try that was never started, and says which attempt was stale', () => {
      given(live, started(1)).when({ type: 'RecordProviderSuccess', attempt: 2, providerResourceId: 'p', now: T1 }).thenThrows(StaleAttempt);
      expect(() => given(live, started(1)).when({ type: 'RecordProviderSuccess', attempt: 2, providerResourceId: 'p', now: T1 }).events()).toThrow(
        'attempt 2 was never started',
      );
      expect(() => given(live, started(1)).when(start(1)).events()).toThrow('attempt 1 after 1');
    });

    it('refuses to start a try of a dispatch that is not accepted', () => {
      given(live, started(1), completed).when(start(2)).thenThrows(DispatchNotInProgress);
      given().when(start(1)).thenThrows(DispatchNotFound);
    });

    it('tells partners nothing of a started try', () => expect(toNotification(started(1), given(live, started(1)).state() as never)).toBeNull());
  });
});
