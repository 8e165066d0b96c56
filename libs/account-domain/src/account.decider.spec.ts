import { specFor } from '@campaign-ops/testing/decider';
import { assertNever } from '@campaign-ops/decider';
import {
  AccountEvent,
  accountDecider,
  AccountNotFound,
  accountStreamId,
  ApiKeyNotFound,
  AccountAlreadyOpen,
  creditGrantsOf,
  upcastAccountEvent,
} from './account.decider';
import { MODES } from './mode';
import { generateApiKey, hashApiKey, looksLikeApiKey } from './api-key';

const given = specFor(accountDecider);
const T = '2026-11-22T10:00:00.000Z';
const opened: AccountEvent = {
  type: 'AccountOpened',
  version: 1,
  data: { accountId: 'acct_1', name: 'Acme', credits: { live: 1000, test: 1000 }, openedAt: T },
};
const issued: AccountEvent = { type: 'ApiKeyIssued', version: 1, data: { keyId: 'key_1', mode: 'test', keyHash: 'h', issuedAt: T } };
const revoked: AccountEvent = { type: 'ApiKeyRevoked', version: 1, data: { keyId: 'key_1', revokedAt: T } };

describe('account decider', () => {
  it('opens an account with the same credits in each mode', () =>
    given().when({ type: 'OpenAccount', accountId: 'acct_1', name: 'Acme', credits: 1000, now: T }).then([opened]));
  it('opens an account once', () =>
    given(opened).when({ type: 'OpenAccount', accountId: 'acct_1', name: 'Acme', credits: 1, now: T }).thenThrows(AccountAlreadyOpen));
  it('issues keys only on an open account', () =>
    given().when({ type: 'IssueApiKey', keyId: 'key_1', mode: 'test', keyHash: 'h', now: T }).thenThrows(AccountNotFound));
  it('issues a key', () => given(opened).when({ type: 'IssueApiKey', keyId: 'key_1', mode: 'test', keyHash: 'h', now: T }).then([issued]));
  it('revokes a key of the account', () => given(opened, issued).when({ type: 'RevokeApiKey', keyId: 'key_1', now: T }).then([revoked]));
  it('revokes a revoked key without a new event', () => given(opened, issued, revoked).when({ type: 'RevokeApiKey', keyId: 'key_1', now: T }).then([]));
  it('refuses to revoke another account’s key', () => given(opened).when({ type: 'RevokeApiKey', keyId: 'key_9', now: T }).thenThrows(ApiKeyNotFound));
  it('adds granted credits to the mode granted', () => {
    const state = given(opened, { type: 'CreditsGranted', version: 1, data: { mode: 'live', amount: 50, grantedAt: T } }).state();
    expect(state).toMatchObject({ credits: { live: 1050, test: 1000 } });
  });
  it('grants credits to one mode', () =>
    given(opened)
      .when({ type: 'GrantCredits', mode: 'live', amount: 50, now: T })
      .then([{ type: 'CreditsGranted', version: 1, data: { mode: 'live', amount: 50, grantedAt: T } }]));
  it('grants nothing to an account that does not exist', () =>
    given().when({ type: 'GrantCredits', mode: 'live', amount: 50, now: T }).thenThrows(AccountNotFound));
  it('keeps its keys, revoked or not, and its creation time', () =>
    expect(given(opened, issued, revoked).state()).toEqual({
      status: 'open',
      id: 'acct_1',
      name: 'Acme',
      credits: { live: 1000, test: 1000 },
      oauthRedirectUris: [],
      keys: { key_1: { mode: 'test', revoked: true } },
      createdAt: T,
    }));

  describe("the account's OAuth redirect URIs and name (operators' settings)", () => {
    const BACK = 'https://partner.example/connected';
    const DEV = 'http://localhost:8080/back';
    const open = (oauthRedirectUris?: string[]) =>
      given().when({ type: 'OpenAccount', accountId: 'acct_1', name: 'Acme', credits: 1000, oauthRedirectUris, now: T }).events();

    it('opens an account with its redirect URIs, each once; none written when none are given', () => {
      expect(open([BACK, DEV, BACK])[0].data).toMatchObject({ oauthRedirectUris: [BACK, DEV] });
      expect(open([])[0].data).not.toHaveProperty('oauthRedirectUris');
      expect(open()[0].data).not.toHaveProperty('oauthRedirectUris');
      expect(given(...open([BACK])).state()).toMatchObject({ oauthRedirectUris: [BACK] });
    });

    it('reads an account opened before they existed as having none', () => expect(given(opened).state()).toMatchObject({ oauthRedirectUris: [] }));

    it('changes them, and the name, recording only what changed', () => {
      given(opened)
        .when({ type: 'ChangeAccountSettings', oauthRedirectUris: [BACK], now: T })
        .then([{ type: 'AccountSettingsChanged', version: 1, data: { oauthRedirectUris: [BACK], changedAt: T } }]);
      given(opened)
        .when({ type: 'ChangeAccountSettings', name: 'Acme EU', oauthRedirectUris: [], now: T })
        .then([{ type: 'AccountSettingsChanged', version: 1, data: { name: 'Acme EU', changedAt: T } }]);
      const changed = { type: 'AccountSettingsChanged', version: 1, data: { name: 'Acme EU', oauthRedirectUris: [DEV], changedAt: T } } as AccountEvent;
      expect(given(opened, changed).state()).toMatchObject({ name: 'Acme EU', oauthRedirectUris: [DEV] });
      expect(given(opened, changed, { ...changed, data: { changedAt: T, name: 'Acme' } } as AccountEvent).state()).toMatchObject({
        name: 'Acme',
        oauthRedirectUris: [DEV],
      });
    });

    it('records a list of the same length with another URI, or a longer one sharing its start, as a change', () => {
      given(...open([BACK]))
        .when({ type: 'ChangeAccountSettings', oauthRedirectUris: [DEV], now: T })
        .then([{ type: 'AccountSettingsChanged', version: 1, data: { oauthRedirectUris: [DEV], changedAt: T } }]);
      given(...open([BACK]))
        .when({ type: 'ChangeAccountSettings', oauthRedirectUris: [BACK, DEV], now: T })
        .then([{ type: 'AccountSettingsChanged', version: 1, data: { oauthRedirectUris: [BACK, DEV], changedAt: T } }]);
      given(...open([BACK, DEV]))
        .when({ type: 'ChangeAccountSettings', oauthRedirectUris: [BACK], now: T })
        .then([{ type: 'AccountSettingsChanged', version: 1, data: { oauthRedirectUris: [BACK], changedAt: T } }]);
    });

    it('records nothing when nothing changes (the same values, or none given)', () => {
      given(...open([BACK]))
        .when({ type: 'ChangeAccountSettings', name: 'Acme', oauthRedirectUris: [BACK, BACK], now: T })
        .then([]);
      given(opened).when({ type: 'ChangeAccountSettings', now: T }).then([]);
    });

    it('changes nothing of an account that does not exist', () =>
      given().when({ type: 'ChangeAccountSettings', name: 'x', now: T }).thenThrows(AccountNotFound));
  });
  it('lives in the stream account-<id>, in two modes', () => {
    expect(accountStreamId('acct_1')).toBe('account-acct_1');
    expect(MODES).toEqual(['live', 'test']);
  });

  it.each<[string, AccountEvent[], Parameters<typeof accountDecider.decide>[0], string, RegExp]>([
    [
      'a second opening',
      [opened],
      { type: 'OpenAccount', accountId: 'acct_1', name: 'A', credits: 1, now: T },
      'account_already_open',
      /account acct_1 exists/,
    ],
    ['a missing account', [], { type: 'RevokeApiKey', keyId: 'key_1', now: T }, 'resource_missing', /no such account/],
    ['another account’s key', [opened], { type: 'RevokeApiKey', keyId: 'key_9', now: T }, 'resource_missing', /no key key_9 on this account/],
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
});

describe('credit grants of account events (dispatch-service applies them to its ledgers)', () => {
  const event = (type: string, data: Record<string, unknown>) => ({ id: 'evt_1', type, data });
  it('grants each mode its starting credits, with ids derived from the event', () =>
    expect(creditGrantsOf(event('AccountOpened', { credits: { live: 1000, test: 5 } }))).toEqual([
      { grantId: 'evt_1:live', mode: 'live', amount: 1000 },
      { grantId: 'evt_1:test', mode: 'test', amount: 5 },
    ]));
  it('grants nothing for a mode that starts at zero', () =>
    expect(creditGrantsOf(event('AccountOpened', { credits: { live: 0, test: 1 } }))).toEqual([{ grantId: 'evt_1:test', mode: 'test', amount: 1 }]));
  it('grants what an operator granted, under the event id', () =>
    expect(creditGrantsOf(event('CreditsGranted', { mode: 'live', amount: 7 }))).toEqual([{ grantId: 'evt_1', mode: 'live', amount: 7 }]));
  it('grants nothing for key events', () => expect(creditGrantsOf(event('ApiKeyIssued', { keyId: 'key_1', mode: 'live', keyHash: 'h' }))).toEqual([]));
});

describe('stored account events', () => {
  it.each(['AccountOpened', 'ApiKeyIssued', 'ApiKeyRevoked', 'CreditsGranted'])('reads %s v1 as it was written', (type) =>
    expect(upcastAccountEvent(type, { a: 1 }, 1)).toEqual({ type, version: 1, data: { a: 1 } }),
  );
  it('refuses a type it does not know, and a version it cannot read', () => {
    expect(() => upcastAccountEvent('AccountClosed', {}, 1)).toThrow('cannot read account event AccountClosed v1');
    expect(() => upcastAccountEvent('AccountOpened', {}, 2)).toThrow('cannot read account event AccountOpened v2');
  });
  it('names a case nobody handled', () => expect(() => assertNever({ type: 'Nope' } as never)).toThrow('unhandled case: {"type":"Nope"}'));
});

describe('api keys', () => {
  it('have the mode prefix, enough randomness, and a stable hash', () => {
    const { key, hash } = generateApiKey('live');
    expect(key).toMatch(/^mk_live_[0-9A-Za-z]{40}$/);
    expect(looksLikeApiKey(key)).toBe(true);
    expect(hash).toBe(hashApiKey(key));
    expect(hash).not.toContain(key.slice(8));
    expect(generateApiKey('test').key).toMatch(/^mk_test_/);
  });
  it('hash to the hex SHA-256 of the whole key', () =>
    expect(hashApiKey('mk_test_' + 'a'.repeat(40))).toBe('0f98b9f3f48f4a2fa8bd3a6d00cc9e42e5609795b42584397e227efa8be807d8'));
  it('are told apart from anything else', () => {
    expect(looksLikeApiKey('mk_live_' + 'a'.repeat(32))).toBe(true);
    expect(looksLikeApiKey('mk_live_' + 'a'.repeat(128))).toBe(true);
    expect(looksLikeApiKey('mk_live_' + 'a'.repeat(31))).toBe(false);
    expect(looksLikeApiKey('mk_live_' + 'a'.repeat(129))).toBe(false);
    expect(looksLikeApiKey('Bearer mk_live_' + 'a'.repeat(40))).toBe(false);
    expect(looksLikeApiKey('mk_live_' + 'a'.repeat(40) + '!')).toBe(false);
    expect(looksLikeApiKey('mk_live_short')).toBe(false);
    expect(looksLikeApiKey('sk_live_' + 'a'.repeat(40))).toBe(false);
  });
});
