/**
 * The Admin API exists only where ADMIN_TOKEN is set: without it every /admin/v1 route is a route
 * that does not exist (404, and nothing happens), and with it only that token opens it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ops } from '../support/ops-cli';
import { eventually, PartnerClient } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

/** Every Admin API route, aimed at a real account and key so that letting one through would change them. */
const adminRoutes = (accountId: string, keyId: string) =>
  [
    ['POST', '/admin/v1/accounts', { name: 'Intruder' }],
    ['POST', `/admin/v1/accounts/${accountId}/keys`, { mode: 'test' }],
    ['POST', `/admin/v1/accounts/${accountId}/credits`, { mode: 'test', amount: 500 }],
    ['PATCH', `/admin/v1/accounts/${accountId}`, { oauth_redirect_uris: ['https://intruder.example/back'] }],
    ['DELETE', `/admin/v1/keys/${keyId}`, undefined],
  ] as const;

describe('the Admin API', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let existing: { accountId: string; keyId: string; key: string };

  /** Accounts and keys as the read store holds them (the API's source for both). */
  async function stored(): Promise<{ accounts: number; keys: number; revoked: number }> {
    const store = SqliteReadStore.open(join(dataDir, 'read-models.sqlite'));
    try {
      const keys = store.collection('api_keys');
      return { accounts: await store.collection('accounts').count({}), keys: await keys.count({}), revoked: await keys.count({ revoked: true }) };
    } finally {
      await store.close();
    }
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-admin-'));
    service = await ServiceProcess.start('standalone', { DATA_DIR: dataDir });
    // Without the Admin API an operator opens accounts with the command line.
    const account = await ops(['accounts', 'create', '--name', 'Existing'], { DATA_DIR: dataDir });
    const key = await ops(['keys', 'create', '--account', account.id, '--mode', 'test'], { DATA_DIR: dataDir });
    existing = { accountId: account.id, keyId: key.id, key: key.key };
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('does not exist without ADMIN_TOKEN: every route answers 404 route_not_found, token or not, and changes nothing', async () => {
    const partner = new PartnerClient(service.url, existing.key);
    await eventually(async () => (await partner.get('/v1/account')).body.data?.credits_balance === 1000, 15_000, 'the starting credits');

    for (const client of [new PartnerClient(service.url), new PartnerClient(service.url, ADMIN_TOKEN)]) {
      for (const [method, path, body] of adminRoutes(existing.accountId, existing.keyId)) {
        const answer = await client.call(method, path, body);
        expect({ route: `${method} ${path}`, status: answer.status, body: answer.body }).toEqual({
          route: `${method} ${path}`,
          status: 404,
          body: {
            success: false,
            error: { type: 'invalid_request_error', code: 'route_not_found', message: expect.any(String) },
            request_id: expect.stringMatching(/^req_/),
          },
        });
      }
    }

    expect(await stored()).toEqual({ accounts: 1, keys: 1, revoked: 0 });
    const account = await partner.get('/v1/account');
    expect([account.status, account.body.data.credits_balance]).toEqual([200, 1000]);
  });

  it('opens with ADMIN_TOKEN, to that token only: missing 401 api_key_missing, wrong 401 api_key_invalid, right 200', async () => {
    await service.stop();
    service = await ServiceProcess.start('standalone', { DATA_DIR: dataDir, ADMIN_TOKEN });
    // The earlier requests left nothing behind for this start to find.
    expect(await stored()).toEqual({ accounts: 1, keys: 1, revoked: 0 });

    const refusals: Array<[PartnerClient, number, string]> = [
      [new PartnerClient(service.url), 401, 'api_key_missing'],
      [new PartnerClient(service.url, 'e2e-admin-token-0123456780'), 401, 'api_key_invalid'],
      [new PartnerClient(service.url, existing.key), 401, 'api_key_invalid'],
    ];
    for (const [client, status, code] of refusals) {
      for (const [method, path, body] of adminRoutes(existing.accountId, existing.keyId)) {
        const answer = await client.call(method, path, body);
        expect({ route: `${method} ${path}`, status: answer.status, error: answer.body.error }).toEqual({
          route: `${method} ${path}`,
          status,
          error: { type: 'authentication_error', code, message: expect.any(String) },
        });
      }
    }
    expect(await stored()).toEqual({ accounts: 1, keys: 1, revoked: 0 });

    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    const answers = [];
    for (const [method, path, body] of adminRoutes(existing.accountId, existing.keyId)) answers.push(await admin.call(method, path, body));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers[2].body.data.credits).toMatchObject({ test: 1500 });
    expect(answers[3].body.data).toMatchObject({ id: existing.accountId, oauth_redirect_uris: ['https://intruder.example/back'] });
    expect(answers[4].body.data).toEqual({ id: existing.keyId, revoked: true });
    expect(await stored()).toEqual({ accounts: 2, keys: 2, revoked: 1 });
  });

  it('takes a hundred concurrent key issues and fifty concurrent grants on one account: every one answered 200, none lost', async () => {
    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    const id = (await admin.post('/admin/v1/accounts', { name: 'Busy', credits: 0 })).body.data.id;
    const keys = await Promise.all(Array.from({ length: 100 }, () => admin.post(`/admin/v1/accounts/${id}/keys`, { mode: 'test' })));
    expect(keys.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
    expect(new Set(keys.map((answer) => answer.body.data.id)).size).toBe(100);
    const grants = await Promise.all(Array.from({ length: 50 }, () => admin.post(`/admin/v1/accounts/${id}/credits`, { mode: 'test', amount: 2 })));
    expect(grants.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
    const partner = new PartnerClient(service.url, keys[0].body.data.key);
    await eventually(async () => (await partner.get('/v1/account')).body.data?.credits_balance === 100, 15_000, 'all fifty grants in the balance');
    const renames = await Promise.all(Array.from({ length: 30 }, (_, i) => admin.patch(`/admin/v1/accounts/${id}`, { name: `Busy ${i}` })));
    expect(renames.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
  });

  it("keeps an account's OAuth redirect URIs: set when opened, replaced by PATCH, shown to its keys; bad ones refused naming the item", async () => {
    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    const opened = await admin.post('/admin/v1/accounts', {
      name: 'Redirects',
      oauth_redirect_uris: ['https://partner.example/connected', 'http://localhost:3000/back'],
    });
    expect(opened.body.data).toEqual({
      id: expect.stringMatching(/^acct_/),
      name: 'Redirects',
      credits: { live: 1000, test: 1000 },
      oauth_redirect_uris: ['https://partner.example/connected', 'http://localhost:3000/back'],
      created_at: expect.any(String),
    });
    const id = opened.body.data.id;
    const key = (await admin.post(`/admin/v1/accounts/${id}/keys`, { mode: 'live' })).body.data.key;
    const changed = await admin.patch(`/admin/v1/accounts/${id}`, { name: 'Redirects EU', oauth_redirect_uris: ['https://partner.example/eu'] });
    expect(changed.body.data).toMatchObject({
      id,
      name: 'Redirects EU',
      oauth_redirect_uris: ['https://partner.example/eu'],
      credits: { live: 1000, test: 1000 },
    });
    expect((await new PartnerClient(service.url, key).get('/v1/account')).body.data).toMatchObject({
      name: 'Redirects EU',
      oauth_redirect_uris: ['https://partner.example/eu'],
    });

    for (const [uris, param] of [
      [['https://partner.example/back?tenant=7'], 'oauth_redirect_uris.0'],
      [['https://partner.example/ok', 'http://partner.example/back'], 'oauth_redirect_uris.1'],
      [['https://partner.example/back#top'], 'oauth_redirect_uris.0'],
      [['not a url'], 'oauth_redirect_uris.0'],
      [[42], 'oauth_redirect_uris.0'],
      [Array.from({ length: 21 }, (_, i) => `https://partner.example/${i}`), 'oauth_redirect_uris'],
      ['https://partner.example/back', 'oauth_redirect_uris'],
    ] as const) {
      const refused = await admin.patch(`/admin/v1/accounts/${id}`, { oauth_redirect_uris: uris });
      expect({ status: refused.status, error: refused.body.error }).toMatchObject({ status: 400, error: { code: 'parameter_invalid', param } });
    }
    expect((await admin.patch('/admin/v1/accounts/acct_00000000000000000000000000', { name: 'x' })).body.error).toMatchObject({ code: 'resource_missing' });
    expect((await new PartnerClient(service.url, key).get('/v1/account')).body.data.oauth_redirect_uris).toEqual(['https://partner.example/eu']);
  });
});
