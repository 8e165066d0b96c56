import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { indexedOnly } from '@campaign-ops/testing/read-store';
import { AccountDirectory } from './account-directory';

/** Accounts and keys as operators make them and the gateway checks them, over real SQLite stores. */
describe('account directory', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let directory: AccountDirectory;

  beforeEach(() => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    directory = new AccountDirectory(events, reads);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await events.close();
    await reads.close();
  });

  const issue = async (accountId: string, mode: 'live' | 'test') => {
    const issued = await directory.issueKey(accountId, mode);
    if (!issued.ok) throw new Error(issued.error.message);
    return issued.value;
  };

  it('opens an account with its starting credits in each mode, as grants for the ledgers', async () => {
    const { account, grants } = await directory.openAccount('Acme', 250);
    expect(account).toEqual({
      id: expect.stringMatching(/^acct_/),
      name: 'Acme',
      credits: { live: 250, test: 250 },
      oauth_redirect_uris: [],
      created_at: expect.any(String),
    });
    expect(grants.map(({ mode, amount }) => [mode, amount])).toEqual([
      ['live', 250],
      ['test', 250],
    ]);
    expect(await directory.account(account.id)).toEqual(account);
    const [opened] = await events.readStream(`account-${account.id}`);
    expect(opened.metadata).toMatchObject({ accountId: account.id });
  });

  it("keeps the account's OAuth redirect URIs, and changes them and its name; an account that does not exist is resource_missing", async () => {
    const { account } = await directory.openAccount('Acme', 0, ['https://partner.example/connected']);
    expect(account.oauth_redirect_uris).toEqual(['https://partner.example/connected']);
    const changed = await directory.changeSettings(account.id, {
      name: 'Acme EU',
      oauthRedirectUris: ['https://partner.example/eu', 'http://localhost:3000/back'],
    });
    expect(changed).toEqual({
      ok: true,
      value: { ...account, name: 'Acme EU', oauth_redirect_uris: ['https://partner.example/eu', 'http://localhost:3000/back'] },
    });
    expect(await directory.account(account.id)).toMatchObject({
      name: 'Acme EU',
      oauth_redirect_uris: ['https://partner.example/eu', 'http://localhost:3000/back'],
    });
    expect(await directory.changeSettings(account.id, { name: 'Acme EU' })).toMatchObject({
      ok: true,
      value: { oauth_redirect_uris: ['https://partner.example/eu', 'http://localhost:3000/back'] },
    });
    expect(await directory.changeSettings('acct_missing', { name: 'x' })).toEqual({
      ok: false,
      error: { code: 'resource_missing', message: 'No such account: acct_missing', param: 'id' },
    });
    // Any other failure is not an account that does not exist.
    jest.spyOn(events, 'append').mockRejectedValueOnce(new Error('disk full'));
    await expect(directory.changeSettings(account.id, { name: 'Again' })).rejects.toThrow('disk full');
  });

  it('authenticates each key as its own account and mode, and nothing else', async () => {
    const a = (await directory.openAccount('A')).account.id;
    const b = (await directory.openAccount('B')).account.id;
    const keyA = await issue(a, 'live');
    const keyB = await issue(b, 'test');
    expect(keyA).toMatchObject({ key: expect.stringMatching(/^mk_live_/), mode: 'live', account_id: a });
    expect(await directory.authenticate(keyB.key)).toEqual({ ok: true, accountId: b, mode: 'test', keyId: keyB.id });
    expect(await directory.authenticate(keyA.key)).toEqual({ ok: true, accountId: a, mode: 'live', keyId: keyA.id });
    expect(await directory.authenticate('mk_live_' + 'Z'.repeat(40))).toEqual({ ok: false, code: 'api_key_invalid' });
    expect(await directory.authenticate('not a key')).toEqual({ ok: false, code: 'api_key_invalid' });
  });

  it('finds a presented key through an index the read store was told to build (no collection scan per request)', async () => {
    const indexed = new AccountDirectory(events, indexedOnly(reads));
    const id = (await indexed.openAccount('A')).account.id;
    const { key, id: keyId } = await issue(id, 'live');
    expect(await indexed.authenticate(key)).toEqual({ ok: true, accountId: id, mode: 'live', keyId });
    expect(await indexed.authenticate('mk_live_' + 'Z'.repeat(40))).toEqual({ ok: false, code: 'api_key_invalid' });
  });

  it('answers api_key_invalid to something that is not a key without asking the store (junk stays a 401 while the store is down)', async () => {
    const find = jest.spyOn(directory.keys, 'find').mockRejectedValue(new Error('read store down'));
    expect(await directory.authenticate('not a key')).toEqual({ ok: false, code: 'api_key_invalid' });
    expect(await directory.authenticate('mk_live_short')).toEqual({ ok: false, code: 'api_key_invalid' });
    expect(find).not.toHaveBeenCalled();
    await expect(directory.authenticate('mk_live_' + 'Z'.repeat(40))).rejects.toThrow('read store down');
  });

  it('keeps only the hash of a key', async () => {
    const id = (await directory.openAccount('A')).account.id;
    const { key } = await issue(id, 'live');
    const stored = JSON.stringify([await events.readStream(`account-${id}`), (await reads.collection('api_keys').find({}, { limit: 10 })).items]);
    expect(stored).not.toContain(key.slice(8));
  });

  it('revokes a key (again harmlessly); a revoked key is told apart from a wrong one', async () => {
    const id = (await directory.openAccount('A')).account.id;
    const key = await issue(id, 'test');
    expect(await directory.revokeKey(key.id)).toEqual({ ok: true, value: { id: key.id, revoked: true } });
    expect(await directory.revokeKey(key.id)).toEqual({ ok: true, value: { id: key.id, revoked: true } });
    expect(await directory.authenticate(key.key)).toEqual({ ok: false, code: 'api_key_revoked' });
  });

  it('grants credits to one mode and answers the grant', async () => {
    const id = (await directory.openAccount('A', 10)).account.id;
    const granted = await directory.grantCredits(id, 'test', 5);
    expect(granted).toMatchObject({
      ok: true,
      value: { account: { id, credits: { live: 10, test: 15 } }, grants: [{ mode: 'test', amount: 5, grantId: expect.any(String) }] },
    });
  });

  it.each<[string, (d: AccountDirectory) => Promise<unknown>, string]>([
    ['a key for an account that does not exist', (d) => d.issueKey('acct_nope', 'live'), 'No such account: acct_nope'],
    ['credits for an account that does not exist', (d) => d.grantCredits('acct_nope', 'live', 1), 'No such account: acct_nope'],
    ['the revocation of a key that does not exist', (d) => d.revokeKey('key_nope'), 'No such key: key_nope'],
  ])('answers resource_missing (param id) to %s', async (_, call, message) =>
    expect(await call(directory)).toEqual({ ok: false, error: { code: 'resource_missing', message, param: 'id' } }),
  );

  it("answers resource_missing to the revocation of a key its view still shows but its account's stream does not", async () => {
    const id = (await directory.openAccount('A')).account.id;
    await directory.keys.upsert({ id: 'key_ghost', account_id: id, mode: 'live', key_hash: 'h', revoked: false, created_at: new Date().toISOString() }, 99);
    expect(await directory.revokeKey('key_ghost')).toEqual({ ok: false, error: { code: 'resource_missing', message: 'No such key: key_ghost', param: 'id' } });
  });

  it('does not hide other failures of the store', async () => {
    const id = (await directory.openAccount('A')).account.id;
    await directory.keys.upsert({ id: 'key_1', account_id: id, mode: 'live', key_hash: 'h', revoked: false, created_at: new Date().toISOString() }, 99);
    jest.spyOn(events, 'append').mockRejectedValue(new Error('disk full'));
    await expect(directory.issueKey(id, 'live')).rejects.toThrow('disk full');
    await expect(directory.grantCredits(id, 'live', 1)).rejects.toThrow('disk full');
    jest.spyOn(events, 'readStream').mockRejectedValue(new Error('disk gone'));
    await expect(directory.revokeKey('key_1')).rejects.toThrow('disk gone');
  });
});
