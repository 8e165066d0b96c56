import { decideAll } from '@campaign-ops/decider';
import { accountDecider } from '@campaign-ops/account-domain';
import { documentsAfter } from '@campaign-ops/event-sourcing';
import { accountsProjection } from './account-directory';

describe('the accounts projection', () => {
  it('given an account with two keys, one revoked, then its document, and one api_keys document per key in the order issued', () => {
    const now = '2026-12-01T08:00:00.000Z';
    const given = decideAll(accountDecider, [
      { type: 'OpenAccount', accountId: 'acct_1', name: 'Acme', credits: 100, oauthRedirectUris: ['https://acme.example/back'], now },
      { type: 'IssueApiKey', keyId: 'key_1', mode: 'test', keyHash: 'a'.repeat(64), now },
      { type: 'IssueApiKey', keyId: 'key_2', mode: 'live', keyHash: 'b'.repeat(64), now },
      { type: 'RevokeApiKey', keyId: 'key_1', now },
    ]);
    const documents = documentsAfter(accountsProjection, 'account-acct_1', given);
    expect(documents.map((d) => [d.collection, d.doc.id])).toEqual([
      ['accounts', 'acct_1'],
      ['api_keys', 'key_1'],
      ['api_keys', 'key_2'],
    ]);
    expect(documents[0].doc).toMatchObject({ name: 'Acme', oauth_redirect_uris: ['https://acme.example/back'], created_at: now });
    expect(documents[1].doc).toEqual({ id: 'key_1', account_id: 'acct_1', mode: 'test', key_hash: 'a'.repeat(64), revoked: true, created_at: now });
    expect(documents[2].doc).toMatchObject({ id: 'key_2', mode: 'live', revoked: false });
    expect(accountsProjection.documentId('account-acct_1')).toBe('acct_1');
  });

  it('given no event of an account, then no document', () => {
    expect(documentsAfter(accountsProjection, 'account-acct_1', [])).toEqual([]);
  });
});
