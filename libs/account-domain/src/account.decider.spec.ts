import { specFor } from '@campaign-ops/testing/decider';
import { AccountEvent, accountDecider, AccountNotFound, ApiKeyNotFound, AccountAlreadyOpen } from './account.decider';
import { generateApiKey, hashApiKey, looksLikeApiKey } from './api-key';

const given = specFor(accountDecider);
const T = '2026-11-22T10:00:00.000Z';
const opened: AccountEvent = { type: 'AccountOpened', version: 1, data: { accountId: 'acct_1', name: 'Acme', credits: { live: 1000, test: 1000 }, openedAt: T } };
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
  it('are told apart from anything else', () => {
    expect(looksLikeApiKey('mk_live_short')).toBe(false);
    expect(looksLikeApiKey('sk_live_' + 'a'.repeat(40))).toBe(false);
  });
});
