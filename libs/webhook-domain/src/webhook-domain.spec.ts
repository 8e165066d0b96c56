import { specFor } from '@campaign-ops/testing/decider';
import { afterAttempt, Delivery } from './delivery';
import { DEFAULT_RETRY_SCHEDULE, nextRetryDelay, parseRetrySchedule } from './retry-schedule';
import { EndpointNotFound, WebhookEndpointEvent, webhookEndpointDecider } from './webhook-endpoint.decider';
import { webhookBody } from './webhook-events';

const given = specFor(webhookEndpointDecider);
const T = '2026-11-22T10:00:00.000Z';
const created: WebhookEndpointEvent = {
  type: 'WebhookEndpointCreated',
  version: 1,
  data: { endpointId: 'whk_1', accountId: 'acct_1', mode: 'test', url: 'https://example.com/h', events: ['dispatch.completed'], sealedSecret: 's', createdAt: T },
};
const deleted: WebhookEndpointEvent = { type: 'WebhookEndpointDeleted', version: 1, data: { deletedAt: T } };

describe('webhook endpoint decider', () => {
  it('creates an endpoint', () =>
    given()
      .when({ type: 'CreateEndpoint', endpointId: 'whk_1', accountId: 'acct_1', mode: 'test', url: 'https://example.com/h', events: ['dispatch.completed'], sealedSecret: 's', now: T })
      .then([created]));
  it('deletes an endpoint', () => given(created).when({ type: 'DeleteEndpoint', now: T }).then([deleted]));
  it('finds nothing to delete twice', () => given(created, deleted).when({ type: 'DeleteEndpoint', now: T }).thenThrows(EndpointNotFound));
  it('finds nothing to update once deleted', () =>
    given(created, deleted).when({ type: 'UpdateEndpoint', enabled: false, now: T }).thenThrows(EndpointNotFound));
  it('disables an enabled endpoint once', () => {
    given(created).when({ type: 'DisableEndpoint', reason: 'failing for 5 days', now: T }).then([
      { type: 'WebhookEndpointDisabled', version: 1, data: { reason: 'failing for 5 days', disabledAt: T } },
    ]);
    given(created, { type: 'WebhookEndpointDisabled', version: 1, data: { reason: 'r', disabledAt: T } }).when({ type: 'DisableEndpoint', reason: 'r', now: T }).then([]);
  });
  it('rotates the secret', () => {
    const state = given(created, { type: 'WebhookSecretRotated', version: 1, data: { sealedSecret: 's2', rotatedAt: T } }).state();
    expect(state).toMatchObject({ sealedSecret: 's2' });
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
    id: 'dlv_1', endpoint_id: 'whk_1', account_id: 'acct_1', mode: 'test', event_id: 'evt_1', event: 'dispatch.completed', body: '{}',
    status: 'pending', attempts: 0, last_status_code: null, last_error: null, next_attempt_at: T, lease_until: T, created_at: T, updated_at: T,
  };
  const now = new Date(T);
  it('succeed on a 2xx', () =>
    expect(afterAttempt(delivery, { ok: true, statusCode: 204, error: null }, now, [1000])).toMatchObject({ status: 'succeeded', attempts: 1, next_attempt_at: null, lease_until: null }));
  it('are scheduled again after a failure while the schedule lasts', () =>
    expect(afterAttempt(delivery, { ok: false, statusCode: 500, error: 'http_500' }, now, [1000], () => 0.5)).toMatchObject({
      status: 'pending', attempts: 1, last_status_code: 500, last_error: 'http_500', next_attempt_at: '2026-11-22T10:00:01.000Z',
    }));
  it('fail at once when there is nothing to retry for', () =>
    expect(afterAttempt(delivery, { ok: false, statusCode: null, error: 'endpoint_deleted', final: true }, now, [1000])).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null }));
  it('fail for good when the schedule is spent', () =>
    expect(afterAttempt({ ...delivery, attempts: 1 }, { ok: false, statusCode: null, error: 'timeout' }, now, [1000])).toMatchObject({ status: 'failed', attempts: 2 }));
});

describe('webhook body', () => {
  it('has the contract’s fields in order', () =>
    expect(webhookBody({ data: { a: 1 }, timestamp: T, event: 'dispatch.completed', id: 'evt_1' })).toBe(
      `{"id":"evt_1","event":"dispatch.completed","timestamp":"${T}","data":{"a":1}}`,
    ));
});
