import { specFor } from '@campaign-ops/testing/decider';
import { afterAttempt, Delivery, MAX_ATTEMPT_LOG } from './delivery';
import { DEFAULT_RETRY_SCHEDULE, nextRetryDelay, parseRetrySchedule } from './retry-schedule';
import {
  EndpointAlreadyExists,
  EndpointNotFound,
  upcastWebhookEndpointEvent,
  WebhookEndpointCommand,
  WebhookEndpointEvent,
  webhookEndpointDecider,
  webhookStreamId,
} from './webhook-endpoint.decider';
import { webhookBody } from './webhook-events';

const given = specFor(webhookEndpointDecider);
const T = '2026-11-22T10:00:00.000Z';
const T1 = '2026-11-22T11:00:00.000Z';
const created: WebhookEndpointEvent = {
  type: 'WebhookEndpointCreated',
  version: 1,
  data: {
    endpointId: 'whk_1',
    accountId: 'acct_1',
    mode: 'test',
    url: 'https://example.com/h',
    events: ['dispatch.completed'],
    sealedSecret: 's',
    createdAt: T,
  },
};
const deleted: WebhookEndpointEvent = { type: 'WebhookEndpointDeleted', version: 1, data: { deletedAt: T } };

describe('webhook endpoint decider', () => {
  it('creates an endpoint', () =>
    given()
      .when({
        type: 'CreateEndpoint',
        endpointId: 'whk_1',
        accountId: 'acct_1',
        mode: 'test',
        url: 'https://example.com/h',
        events: ['dispatch.completed'],
        sealedSecret: 's',
        now: T,
      })
      .then([created]));
  it('deletes an endpoint', () => given(created).when({ type: 'DeleteEndpoint', now: T }).then([deleted]));
  it('finds nothing to delete twice', () => given(created, deleted).when({ type: 'DeleteEndpoint', now: T }).thenThrows(EndpointNotFound));
  it('finds nothing to update once deleted', () =>
    given(created, deleted).when({ type: 'UpdateEndpoint', enabled: false, now: T }).thenThrows(EndpointNotFound));
  it('disables an enabled endpoint once', () => {
    given(created)
      .when({ type: 'DisableEndpoint', reason: 'failing for 5 days', now: T })
      .then([{ type: 'WebhookEndpointDisabled', version: 1, data: { reason: 'failing for 5 days', disabledAt: T } }]);
    given(created, { type: 'WebhookEndpointDisabled', version: 1, data: { reason: 'r', disabledAt: T } })
      .when({ type: 'DisableEndpoint', reason: 'r', now: T })
      .then([]);
  });
  it('rotates the secret', () => {
    given(created)
      .when({ type: 'RotateSecret', sealedSecret: 's2', now: T1 })
      .then([{ type: 'WebhookSecretRotated', version: 1, data: { sealedSecret: 's2', rotatedAt: T1 } }]);
    const state = given(created, { type: 'WebhookSecretRotated', version: 1, data: { sealedSecret: 's2', rotatedAt: T1 } }).state();
    expect(state).toMatchObject({ sealedSecret: 's2', updatedAt: T1 });
  });
  it('lives in the stream webhook-<id>', () => expect(webhookStreamId('whk_1')).toBe('webhook-whk_1'));
  it('is created once', () =>
    given(created)
      .when({ type: 'CreateEndpoint', endpointId: 'whk_1', accountId: 'acct_1', mode: 'test', url: 'https://x.example', events: [], sealedSecret: 's', now: T })
      .thenThrows(EndpointAlreadyExists));
  it('starts enabled, with what it was created with', () =>
    expect(given(created).state()).toEqual({
      status: 'exists',
      id: 'whk_1',
      accountId: 'acct_1',
      mode: 'test',
      url: 'https://example.com/h',
      events: ['dispatch.completed'],
      sealedSecret: 's',
      enabled: true,
      disabledReason: null,
      deleted: false,
      createdAt: T,
      updatedAt: T,
    }));

  describe('an update', () => {
    const update = (command: Omit<Extract<WebhookEndpointCommand, { type: 'UpdateEndpoint' }>, 'type' | 'now'>) =>
      given(created)
        .when({ type: 'UpdateEndpoint', ...command, now: T1 })
        .events();
    it('records only the fields given', () => {
      expect(update({ url: 'https://new.example/h' })).toStrictEqual([
        { type: 'WebhookEndpointUpdated', version: 1, data: { url: 'https://new.example/h', updatedAt: T1 } },
      ]);
      expect(update({ events: ['dispatch.failed'] })).toStrictEqual([
        { type: 'WebhookEndpointUpdated', version: 1, data: { events: ['dispatch.failed'], updatedAt: T1 } },
      ]);
      expect(update({ enabled: false })).toStrictEqual([{ type: 'WebhookEndpointUpdated', version: 1, data: { enabled: false, updatedAt: T1 } }]);
    });
    it('changes only those fields', () => {
      const state = given(created, { type: 'WebhookEndpointUpdated', version: 1, data: { events: ['dispatch.failed'], updatedAt: T1 } }).state();
      expect(state).toMatchObject({ url: 'https://example.com/h', events: ['dispatch.failed'], enabled: true, updatedAt: T1 });
      expect(given(created, { type: 'WebhookEndpointUpdated', version: 1, data: { url: 'https://new.example/h', updatedAt: T1 } }).state()).toMatchObject({
        url: 'https://new.example/h',
        events: ['dispatch.completed'],
      });
    });
    it('re-enabling a disabled endpoint clears why it was disabled; disabling by hand keeps no reason', () => {
      const disabled: WebhookEndpointEvent = { type: 'WebhookEndpointDisabled', version: 1, data: { reason: 'failing for 5 days', disabledAt: T } };
      expect(given(created, disabled).state()).toMatchObject({ enabled: false, disabledReason: 'failing for 5 days' });
      expect(given(created, disabled, { type: 'WebhookEndpointUpdated', version: 1, data: { enabled: true, updatedAt: T1 } }).state()).toMatchObject({
        enabled: true,
        disabledReason: null,
      });
      expect(given(created, disabled, { type: 'WebhookEndpointUpdated', version: 1, data: { enabled: false, updatedAt: T1 } }).state()).toMatchObject({
        enabled: false,
        disabledReason: 'failing for 5 days',
      });
    });
  });

  it.each<[string, WebhookEndpointEvent[], WebhookEndpointCommand, string, RegExp]>([
    ['a missing endpoint', [], { type: 'RotateSecret', sealedSecret: 's', now: T }, 'resource_missing', /no such webhook endpoint/],
    [
      'a second creation',
      [created],
      { type: 'CreateEndpoint', endpointId: 'whk_1', accountId: 'a', mode: 'test', url: 'u', events: [], sealedSecret: 's', now: T },
      'endpoint_already_exists',
      /endpoint whk_1 exists/,
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
    expect([error?.rule, error?.message]).toEqual([rule, expect.stringMatching(message)]);
  });

  it.each(['WebhookEndpointCreated', 'WebhookEndpointUpdated', 'WebhookSecretRotated', 'WebhookEndpointDisabled', 'WebhookEndpointDeleted'])(
    'reads a stored %s v1 as it was written',
    (type) => expect(upcastWebhookEndpointEvent(type, { a: 1 }, 1)).toEqual({ type, version: 1, data: { a: 1 } }),
  );
  it('refuses a stored event it does not know, or a version it cannot read', () => {
    expect(() => upcastWebhookEndpointEvent('WebhookEndpointMoved', {}, 1)).toThrow('cannot read webhook endpoint event WebhookEndpointMoved v1');
    expect(() => upcastWebhookEndpointEvent('WebhookEndpointDeleted', {}, 2)).toThrow('cannot read webhook endpoint event WebhookEndpointDeleted v2');
  });
});

describe('retry schedule', () => {
  it('parses the default schedule to about three days', () => {
    const total = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE).reduce((a, b) => a + b, 0);
    expect(total / 86_400_000).toBeGreaterThan(2.9);
    expect(total / 86_400_000).toBeLessThan(3.4);
    expect(parseRetrySchedule('1s,1s,2s')).toEqual([1000, 1000, 2000]);
    expect(parseRetrySchedule('250ms, 1.5m')).toEqual([250, 90_000]);
  });
  it.each(['', '5', '5x', '1s,,2s', '0s'])('refuses %p', (text) => expect(() => parseRetrySchedule(text)).toThrow());
  it('jitters by at most 10 % and ends when spent', () => {
    expect(nextRetryDelay([1000], 1, () => 0)).toBe(900);
    expect(nextRetryDelay([1000], 1, () => 1)).toBe(1100);
    expect(nextRetryDelay([1000], 2)).toBeNull();
  });
});

describe('delivery attempts', () => {
  const delivery: Delivery = {
    id: 'dlv_1',
    endpoint_id: 'whk_1',
    account_id: 'acct_1',
    mode: 'test',
    event_id: 'evt_1',
    event: 'dispatch.completed',
    body: '{}',
    status: 'pending',
    attempts: 0,
    last_status_code: null,
    last_error: null,
    next_attempt_at: T,
    lease_until: T,
    created_at: T,
    updated_at: T,
  };
  const now = new Date(T);
  it('succeed on a 2xx', () =>
    expect(afterAttempt(delivery, { ok: true, statusCode: 204, error: null }, now, [1000])).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      next_attempt_at: null,
      lease_until: null,
    }));
  it('are scheduled again after a failure while the schedule lasts', () =>
    expect(afterAttempt(delivery, { ok: false, statusCode: 500, error: 'http_500' }, now, [1000], () => 0.5)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_status_code: 500,
      last_error: 'http_500',
      next_attempt_at: '2026-11-22T10:00:01.000Z',
    }));
  it('fail at once when there is nothing to retry for', () =>
    expect(afterAttempt(delivery, { ok: false, statusCode: null, error: 'endpoint_deleted', final: true }, now, [1000])).toMatchObject({
      status: 'failed',
      attempts: 1,
      next_attempt_at: null,
    }));
  it('fail for good when the schedule is spent', () =>
    expect(afterAttempt({ ...delivery, attempts: 1 }, { ok: false, statusCode: null, error: 'timeout' }, now, [1000])).toMatchObject({
      status: 'failed',
      attempts: 2,
    }));
  it('are logged one by one, oldest first: when each started, how long it took, how it ended', () => {
    const first = afterAttempt(
      delivery,
      { ok: false, statusCode: 503, error: 'http_503', startedAt: '2026-11-22T09:59:59.900Z', durationMs: 95 },
      now,
      [1000, 1000],
    );
    const second = afterAttempt(first, { ok: false, statusCode: null, error: 'timeout' }, new Date('2026-11-22T10:00:02.000Z'), [1000, 1000]);
    const third = afterAttempt(second, { ok: true, statusCode: 200, error: null, startedAt: '2026-11-22T10:00:04.000Z', durationMs: 12 }, now, [1000, 1000]);
    expect(third.attempt_log).toEqual([
      { attempt: 1, at: '2026-11-22T09:59:59.900Z', duration_ms: 95, succeeded: false, status_code: 503, error: 'http_503' },
      { attempt: 2, at: '2026-11-22T10:00:02.000Z', duration_ms: null, succeeded: false, status_code: null, error: 'timeout' },
      { attempt: 3, at: '2026-11-22T10:00:04.000Z', duration_ms: 12, succeeded: true, status_code: 200, error: null },
    ]);
  });
  it('keep the newest MAX_ATTEMPT_LOG attempts in their log', () => {
    let current = delivery;
    for (let i = 0; i < MAX_ATTEMPT_LOG + 3; i++)
      current = afterAttempt(current, { ok: false, statusCode: 500, error: 'http_500' }, now, Array(100).fill(1000));
    expect(current.attempt_log).toHaveLength(MAX_ATTEMPT_LOG);
    expect(current.attempt_log![0].attempt).toBe(4);
    expect(current.attempt_log!.at(-1)!.attempt).toBe(MAX_ATTEMPT_LOG + 3);
  });
});

describe('webhook body', () => {
  it('has the contract’s fields in order', () =>
    expect(webhookBody({ data: { a: 1 }, timestamp: T, event: 'dispatch.completed', id: 'evt_1' })).toBe(
      `{"id":"evt_1","event":"dispatch.completed","timestamp":"${T}","data":{"a":1}}`,
    ));
});
