import { specFor } from '@campaign-ops/testing/decider';
import { Connection, connectionDecider, ConnectionEvent } from './connection.decider';
import { toConnectionNotification, toConnectionResource } from './connection.views';

const given = specFor(connectionDecider);
const T0 = '2026-11-24T10:00:00.000Z';
const T1 = '2026-11-24T10:05:00.000Z';
const identity = { connectionId: 'con_1', accountId: 'acct_1', mode: 'test', channel: 'meta_ads', providerAccountId: 'act_42' } as const;
const activated: ConnectionEvent = {
  type: 'ConnectionActivated',
  version: 1,
  data: { ...identity, scopes: [], currency: 'USD', timezone: 'UTC', expiresAt: null, method: 'sandbox', stateHash: null, activatedAt: T0 },
};
const reauthRequired: ConnectionEvent = { type: 'ReauthRequired', version: 1, data: { reason: 'refresh_refused', at: T1 } };
const reauthorized: ConnectionEvent = {
  type: 'ConnectionReauthorized',
  version: 1,
  data: { scopes: [], currency: 'USD', timezone: 'UTC', expiresAt: null, method: 'sandbox', stateHash: null, reauthorizedAt: T1 },
};
const after = (...history: ConnectionEvent[]) => given(...history).state() as Connection;

describe('the connection as partners see it', () => {
  it('is the resource of docs/api.md#connections-and-oauth, in its field order, without tokens or OAuth state', () => {
    const resource = toConnectionResource(after(activated, reauthRequired));
    expect(Object.keys(resource)).toEqual([
      'id',
      'channel',
      'status',
      'provider_account_id',
      'environment',
      'scopes',
      'currency',
      'timezone',
      'expires_at',
      'reauth_reason',
      'created_at',
      'updated_at',
    ]);
    expect(resource).toEqual({
      id: 'con_1',
      channel: 'meta_ads',
      status: 'reauth_required',
      provider_account_id: 'act_42',
      environment: 'sandbox',
      scopes: [],
      currency: 'USD',
      timezone: 'UTC',
      expires_at: null,
      reauth_reason: 'refresh_refused',
      created_at: T0,
      updated_at: T1,
    });
    expect(toConnectionResource({ ...after(activated), mode: 'live' }).environment).toBe('live');
  });

  it('becomes connection.active when activated and when reauthorized', () => {
    const data = { connection_id: 'con_1', channel: 'meta_ads', status: 'active', provider_account_id: 'act_42', environment: 'sandbox' };
    expect(toConnectionNotification(activated, after(activated))).toEqual({ event: 'connection.active', data });
    expect(toConnectionNotification(reauthorized, after(activated, reauthRequired, reauthorized))).toEqual({ event: 'connection.active', data });
  });

  it('becomes connection.reauth_required with its reason', () =>
    expect(toConnectionNotification(reauthRequired, after(activated, reauthRequired))).toEqual({
      event: 'connection.reauth_required',
      data: {
        connection_id: 'con_1',
        channel: 'meta_ads',
        status: 'reauth_required',
        provider_account_id: 'act_42',
        environment: 'sandbox',
        reason: 'refresh_refused',
      },
    }));

  it.each<ConnectionEvent>([
    {
      type: 'ConnectionRequested',
      version: 1,
      data: { ...identity, scopes: [], oauth: { stateHash: 'h', redirectUri: 'https://x', expiresAt: T1 }, requestedAt: T0 },
    },
    { type: 'OAuthRoundStarted', version: 1, data: { oauth: { stateHash: 'h', redirectUri: 'https://x', expiresAt: T1 }, startedAt: T0 } },
    { type: 'TokenRefreshed', version: 1, data: { expiresAt: T1, refreshedAt: T0 } },
    { type: 'ConnectionRevoked', version: 1, data: { reason: 'deleted', revokedAt: T1 } },
  ])('says nothing to partners of $type', (event) => expect(toConnectionNotification(event, after(activated))).toBeNull());
});
