import { specFor } from '@campaign-ops/testing/decider';
import {
  ConnectionAlreadyExists,
  ConnectionCommand,
  ConnectionEvent,
  ConnectionNotActive,
  ConnectionNotFound,
  ConnectionRevokedError,
  upcastConnectionEvent,
  connectionDecider,
  connectionStreamId,
  CONNECTION_STREAM_PREFIX,
  oauthRoundFor,
  OAuthStateSpent,
  OAuthStateUnknown,
} from './connection.decider';

const given = specFor(connectionDecider);
const T0 = '2026-11-24T10:00:00.000Z';
const T1 = '2026-11-24T10:05:00.000Z';
const LATE = '2026-11-24T10:16:00.000Z';
const identity = { connectionId: 'con_1', accountId: 'acct_1', mode: 'live', channel: 'meta_ads', providerAccountId: 'act_42' } as const;
const account = { currency: 'EUR', timezone: 'Europe/Berlin' };
const round = { stateHash: 'h1', redirectUri: 'https://partner.example/back', expiresAt: '2026-11-24T10:15:00.000Z' };

const requested: ConnectionEvent = {
  type: 'ConnectionRequested',
  version: 1,
  data: { ...identity, scopes: ['ads_management'], oauth: round, requestedAt: T0 },
};
const imported: ConnectionEvent = {
  type: 'ConnectionActivated',
  version: 1,
  data: {
    ...identity,
    scopes: ['ads_management'],
    ...account,
    expiresAt: '2026-12-24T10:00:00.000Z',
    method: 'token_import',
    stateHash: null,
    activatedAt: T0,
  },
};
const reauthRequired: ConnectionEvent = { type: 'ReauthRequired', version: 1, data: { reason: 'invalid_grant', at: T1 } };
const revoked: ConnectionEvent = { type: 'ConnectionRevoked', version: 1, data: { reason: 'deleted', revokedAt: T1 } };

describe('connection', () => {
  it('lives in the stream connection-<id>', () => {
    expect(connectionStreamId('con_1')).toBe('connection-con_1');
    expect(connectionStreamId('con_1').startsWith(CONNECTION_STREAM_PREFIX)).toBe(true);
  });

  describe('token import', () => {
    it('activates a new connection at once with the ad account read from the provider', () =>
      given()
        .when({ type: 'ImportToken', ...identity, scopes: ['ads_management'], account, expiresAt: '2026-12-24T10:00:00.000Z', sandbox: false, now: T0 })
        .then([imported]));
    it('marks a sandbox connection as such', () =>
      expect(
        given()
          .when({
            type: 'ImportToken',
            ...identity,
            mode: 'test',
            scopes: [],
            account: { currency: 'USD', timezone: 'UTC' },
            expiresAt: null,
            sandbox: true,
            now: T0,
          })
          .events()[0].data,
      ).toMatchObject({
        method: 'sandbox',
        mode: 'test',
        currency: 'USD',
      }));
    it('refuses to create a connection twice', () =>
      given(imported)
        .when({ type: 'ImportToken', ...identity, scopes: [], account, expiresAt: null, sandbox: false, now: T1 })
        .thenThrows(ConnectionAlreadyExists));
    it('shows the connection active, with the account currency and timezone', () =>
      expect(given(imported).state()).toEqual({
        id: 'con_1',
        accountId: 'acct_1',
        mode: 'live',
        channel: 'meta_ads',
        providerAccountId: 'act_42',
        status: 'active',
        scopes: ['ads_management'],
        currency: 'EUR',
        timezone: 'Europe/Berlin',
        expiresAt: '2026-12-24T10:00:00.000Z',
        reauthReason: null,
        oauth: null,
        usedStateHashes: [],
        createdAt: T0,
        updatedAt: T0,
      }));
  });

  describe('OAuth', () => {
    const start: ConnectionCommand = { type: 'StartOAuth', ...identity, scopes: ['ads_management'], oauth: round, now: T0 };
    const complete = (stateHash: string, now = T1): ConnectionCommand => ({
      type: 'CompleteOAuth',
      stateHash,
      scopes: ['ads_management'],
      account,
      expiresAt: '2026-12-24T10:05:00.000Z',
      now,
    });

    it('starts pending, with a single-use state bound to it', () => given().when(start).then([requested]));
    it('is pending until the callback', () => expect(given(requested).state()).toMatchObject({ status: 'pending', currency: null, oauth: round }));
    it('activates on the callback with the state it issued', () =>
      expect(given(requested).when(complete('h1')).events()).toEqual([
        {
          type: 'ConnectionActivated',
          version: 1,
          data: {
            ...identity,
            scopes: ['ads_management'],
            ...account,
            expiresAt: '2026-12-24T10:05:00.000Z',
            method: 'oauth',
            stateHash: 'h1',
            activatedAt: T1,
          },
        },
      ]));
    it('refuses a state it never issued', () => given(requested).when(complete('other')).thenThrows(OAuthStateUnknown));
    it('refuses a state past its 15 minutes', () => given(requested).when(complete('h1', LATE)).thenThrows(OAuthStateUnknown));
    it('refuses a state at the very instant it expires', () => given(requested).when(complete('h1', round.expiresAt)).thenThrows(OAuthStateUnknown));
    it('refuses a state used once already (the browser is sent back with an error)', () => {
      const activated = given(requested).when(complete('h1')).events();
      given(requested, ...activated)
        .when(complete('h1'))
        .thenThrows(OAuthStateSpent);
      expect(given(requested, ...activated).state()).toMatchObject({ status: 'active', oauth: null, usedStateHashes: ['h1'] });
    });
    it('refuses the callback of a connection deleted meanwhile', () => given(requested, revoked).when(complete('h1')).thenThrows(OAuthStateSpent));
    describe('the state, checked before the code is exchanged', () => {
      const check =
        (history: ConnectionEvent[], stateHash: string, now = T1) =>
        () =>
          oauthRoundFor(given(...history).state(), stateHash, now);
      it('answers the round a live state belongs to', () => expect(check([requested], 'h1')()).toEqual(round));
      it('knows no state of a connection never created', () => expect(check([], 'h1')).toThrow(new OAuthStateUnknown('no such OAuth state')));
      it('knows no state it never issued', () => expect(check([requested], 'h2')).toThrow(OAuthStateUnknown));
      it('knows no state past its time', () => expect(check([requested], 'h1', round.expiresAt)).toThrow(OAuthStateUnknown));
      it('tells a used state apart', () => {
        const activated = given(requested).when(complete('h1')).events();
        expect(check([requested, ...activated], 'h1')).toThrow(OAuthStateSpent);
      });
      it('tells apart the state of a connection deleted meanwhile', () => expect(check([requested, revoked], 'h1')).toThrow(OAuthStateSpent));
    });
    it('reauthorizes through a new round', () => {
      const next = { ...round, stateHash: 'h2' };
      given(imported, reauthRequired)
        .when({ type: 'StartReauthorization', oauth: next, now: T1 })
        .then([{ type: 'OAuthRoundStarted', version: 1, data: { oauth: next, startedAt: T1 } }]);
      const history = [imported, reauthRequired, { type: 'OAuthRoundStarted', version: 1, data: { oauth: next, startedAt: T1 } } as ConnectionEvent];
      expect(given(...history).state()).toMatchObject({ status: 'reauth_required', oauth: next });
      expect(
        given(...history)
          .when(complete('h2'))
          .events()[0],
      ).toMatchObject({ type: 'ConnectionReauthorized', data: { method: 'oauth', stateHash: 'h2' } });
      const reauthorized = given(...history)
        .when(complete('h2'))
        .events();
      expect(given(...history, ...reauthorized).state()).toMatchObject({ status: 'active', oauth: null, usedStateHashes: ['h2'] });
      given(...history, ...reauthorized)
        .when(complete('h2'))
        .thenThrows(OAuthStateSpent);
    });
  });

  describe('tokens and reauthorization', () => {
    it('records a refreshed token and its new expiry', () => {
      given(imported)
        .when({ type: 'RefreshToken', expiresAt: '2026-12-31T00:00:00.000Z', now: T1 })
        .then([{ type: 'TokenRefreshed', version: 1, data: { expiresAt: '2026-12-31T00:00:00.000Z', refreshedAt: T1 } }]);
      expect(given(imported, { type: 'TokenRefreshed', version: 1, data: { expiresAt: '2026-12-31T00:00:00.000Z', refreshedAt: T1 } }).state()).toMatchObject({
        expiresAt: '2026-12-31T00:00:00.000Z',
        updatedAt: T1,
      });
    });
    it('refreshes only an active connection', () => {
      given(imported, reauthRequired).when({ type: 'RefreshToken', expiresAt: null, now: T1 }).thenThrows(ConnectionNotActive);
      given(requested).when({ type: 'RefreshToken', expiresAt: null, now: T1 }).thenThrows(ConnectionNotActive);
    });
    it('needs reauthorization when the provider refuses', () => {
      given(imported).when({ type: 'RequireReauth', reason: 'invalid_grant', now: T1 }).then([reauthRequired]);
      expect(given(imported, reauthRequired).state()).toMatchObject({ status: 'reauth_required', reauthReason: 'invalid_grant', updatedAt: T1 });
    });
    it('says it once, however many calls meet the refusal', () =>
      given(imported, reauthRequired).when({ type: 'RequireReauth', reason: 'code 190', now: T1 }).then([]));
    it('cannot need reauthorization before it was ever authorized', () =>
      given(requested).when({ type: 'RequireReauth', reason: 'x', now: T1 }).thenThrows(ConnectionNotActive));
    it('is active again after new credentials, without a reason', () => {
      const events = given(imported, reauthRequired)
        .when({ type: 'Reauthorize', scopes: ['ads_management'], account, expiresAt: null, now: T1 })
        .events();
      expect(events).toEqual([
        {
          type: 'ConnectionReauthorized',
          version: 1,
          data: { scopes: ['ads_management'], ...account, expiresAt: null, method: 'token_import', stateHash: null, reauthorizedAt: T1 },
        },
      ]);
      expect(given(imported, reauthRequired, ...events).state()).toMatchObject({ status: 'active', reauthReason: null });
    });
    it('keeps a sandbox connection a sandbox one when it is reauthorized', () =>
      expect(
        given(imported, reauthRequired).when({ type: 'Reauthorize', scopes: [], account, expiresAt: null, sandbox: true, now: T1 }).events()[0],
      ).toMatchObject({
        type: 'ConnectionReauthorized',
        data: { method: 'sandbox' },
      }));
    it('activates a pending connection given credentials instead of the consent', () =>
      expect(given(requested).when({ type: 'Reauthorize', scopes: [], account, expiresAt: null, now: T1 }).events()[0]).toMatchObject({
        type: 'ConnectionActivated',
        data: { method: 'token_import', connectionId: 'con_1' },
      }));
  });

  describe('revocation', () => {
    it('revokes, once', () => {
      given(imported).when({ type: 'Revoke', reason: 'deleted', now: T1 }).then([revoked]);
      given(imported, revoked).when({ type: 'Revoke', reason: 'deleted', now: T1 }).then([]);
      expect(given(imported, revoked).state()).toMatchObject({ status: 'revoked', oauth: null, updatedAt: T1 });
    });
    it.each<ConnectionCommand>([
      { type: 'RefreshToken', expiresAt: null, now: T1 },
      { type: 'Reauthorize', scopes: [], account, expiresAt: null, now: T1 },
      { type: 'StartReauthorization', oauth: round, now: T1 },
    ])('a revoked connection takes no $type', (command) => given(imported, revoked).when(command).thenThrows(ConnectionRevokedError));
    it('a revoked connection needs no reauthorization', () => given(imported, revoked).when({ type: 'RequireReauth', reason: 'x', now: T1 }).then([]));
  });

  it('knows nothing of a connection never created', () => given().when({ type: 'Revoke', reason: 'deleted', now: T1 }).thenThrows(ConnectionNotFound));

  it.each<[string, ConnectionEvent[], ConnectionCommand, string, RegExp]>([
    ['a connection never created', [], { type: 'Revoke', reason: 'deleted', now: T1 }, 'resource_missing', /no such connection/],
    ['a second creation', [imported], { type: 'StartOAuth', ...identity, scopes: [], oauth: round, now: T1 }, 'connection_already_exists', /con_1 exists/],
    ['a revoked connection', [imported, revoked], { type: 'RefreshToken', expiresAt: null, now: T1 }, 'connection_revoked', /revoked/],
    [
      'a refresh of a connection that needs reauthorization',
      [imported, reauthRequired],
      { type: 'RefreshToken', expiresAt: null, now: T1 },
      'connection_not_active',
      /reauth_required connection/,
    ],
    ['a refusal before any authorization', [requested], { type: 'RequireReauth', reason: 'x', now: T1 }, 'connection_not_active', /never authorized/],
    [
      'a state never issued',
      [requested],
      { type: 'CompleteOAuth', stateHash: 'nope', scopes: [], account, expiresAt: null, now: T1 },
      'state_invalid',
      /no such OAuth state/,
    ],
    ['an expired state', [requested], { type: 'CompleteOAuth', stateHash: 'h1', scopes: [], account, expiresAt: null, now: LATE }, 'state_invalid', /expired/],
    [
      'a spent state',
      [requested, revoked],
      { type: 'CompleteOAuth', stateHash: 'h1', scopes: [], account, expiresAt: null, now: T1 },
      'state_spent',
      /already used/,
    ],
  ])('names the rule %s breaks, for the service to answer', (_, history, command, rule, message) => {
    const error = (() => {
      try {
        given(...history)
          .when(command)
          .events();
      } catch (caught) {
        return caught as Error & { rule: string };
      }
      throw new Error('no rule was broken');
    })();
    expect([error.rule, error.message]).toEqual([rule, expect.stringMatching(message)]);
  });

  describe('stored events', () => {
    it.each([
      'ConnectionRequested',
      'ConnectionActivated',
      'OAuthRoundStarted',
      'TokenRefreshed',
      'ReauthRequired',
      'ConnectionReauthorized',
      'ConnectionRevoked',
    ])('reads %s v1 as it was written', (type) => expect(upcastConnectionEvent(type, { a: 1 }, 1)).toEqual({ type, version: 1, data: { a: 1 } }));
    it('refuses a type it does not know, and a version it cannot read', () => {
      expect(() => upcastConnectionEvent('ConnectionTeleported', {}, 1)).toThrow('cannot read connection event ConnectionTeleported v1');
      expect(() => upcastConnectionEvent('ConnectionRevoked', {}, 2)).toThrow('cannot read connection event ConnectionRevoked v2');
    });
  });
});
