/**
 * One test per error code of docs/api.md#errors, each caused through the API as a partner would, against
 * the standalone process with production-like settings (https only, no private hosts).
 * Covered elsewhere, where they need their own set-up: idempotency_key_reused/in_use
 * (idempotency.e2e), rate_limited (rate-limit.e2e), service_unavailable (distributed.e2e),
 * internal_error (libs/gateway api-exception.filter.spec).
 */
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ApiAnswer, eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

describe('every error code, in the envelope', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let admin: PartnerClient;
  let partner: PartnerClient;
  let live: PartnerClient;
  let keys: Awaited<ReturnType<typeof openAccountWithKeys>>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-errors-'));
    service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: dataDir });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    keys = await openAccountWithKeys(admin, 'Errors');
    partner = new PartnerClient(service.url, keys.testKey);
    live = new PartnerClient(service.url, keys.liveKey);
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const expectError = (answer: ApiAnswer, status: number, type: string, code: string, param?: string) => {
    expect({ status: answer.status, success: answer.body.success, type: answer.body.error?.type, code: answer.body.error?.code }).toEqual({
      status,
      success: false,
      type,
      code,
    });
    expect(answer.body.request_id).toMatch(/^req_/);
    expect(typeof answer.body.error.message).toBe('string');
    if (param !== undefined) expect(answer.body.error.param).toBe(param);
    // never a stack trace or a secret
    expect(JSON.stringify(answer.body)).not.toMatch(/at .+\.js:\d+|mk_(test|live)_[0-9A-Za-z]{20}|whsec_/);
  };

  it('body_invalid_json', async () =>
    expectError(await partner.call('POST', '/v1/campaigns', '{"channel": "meta_ads",'), 400, 'invalid_request_error', 'body_invalid_json'));
  it('parameter_missing', async () =>
    expectError(await partner.post('/v1/campaigns', { campaign: sandboxCampaign().campaign }), 400, 'invalid_request_error', 'parameter_missing', 'channel'));
  it('parameter_invalid', async () => {
    const body = sandboxCampaign();
    body.campaign.schedule.timezone = 'Nowhere/Special';
    expectError(await partner.post('/v1/campaigns', body), 400, 'invalid_request_error', 'parameter_invalid', 'campaign.schedule.timezone');
  });
  it('parameter_unknown', async () =>
    expectError(
      await partner.post('/v1/webhooks', { url: 'https://example.com/h', events: ['dispatch.completed'], secret: 'x' }),
      400,
      'invalid_request_error',
      'parameter_unknown',
      'secret',
    ));
  it('parameter_unknown in a query', async () =>
    expectError(await partner.get('/v1/dispatches?colour=red'), 400, 'invalid_request_error', 'parameter_unknown', 'colour'));
  it('parameter_unknown in the query of a route that takes none (reads, POSTs, DELETEs), as in a list', async () => {
    const made = await partner.post('/v1/campaigns', sandboxCampaign());
    expect(made.status).toBe(200);
    expectError(await partner.get(`/v1/dispatches/${made.body.data.id}?expand=campaign`), 400, 'invalid_request_error', 'parameter_unknown', 'expand');
    expectError(await partner.get('/v1/account?colour=red'), 400, 'invalid_request_error', 'parameter_unknown', 'colour');
    expectError(await partner.post('/v1/campaigns?dry=1', sandboxCampaign()), 400, 'invalid_request_error', 'parameter_unknown', 'dry');
    expectError(
      await partner.call('DELETE', '/v1/webhooks/whk_01JZZZZZZZZZZZZZZZZZZZZZZZ?force=true'),
      400,
      'invalid_request_error',
      'parameter_unknown',
      'force',
    );
    // Still a 401 first without a key, as for a body.
    expectError(await new PartnerClient(service.url).get('/v1/account?colour=red'), 401, 'authentication_error', 'api_key_missing');
  });
  it('parameter_invalid, without a param, for the 51st webhook endpoint of an account and mode', async () => {
    const own = new PartnerClient(service.url, (await openAccountWithKeys(admin, 'Endpoints')).testKey);
    for (let i = 0; i < 50; i++)
      expect((await own.post('/v1/webhooks', { url: `https://93.184.215.14/h/${i}`, events: ['dispatch.completed'] })).status).toBe(200);
    const refused = await own.post('/v1/webhooks', { url: 'https://93.184.215.14/h/50', events: ['dispatch.completed'] });
    expectError(refused, 400, 'invalid_request_error', 'parameter_invalid');
    expect(refused.body.error.param).toBeUndefined();
    expect(refused.body.error.message).toContain('at most 50 webhook endpoints');
  });
  it('parameter_unknown in the body of a route that takes none', async () => {
    const launch = await partner.post('/v1/campaigns', sandboxCampaign());
    expectError(await partner.post(`/v1/dispatches/${launch.body.data.id}/retry`, { force: true }), 400, 'invalid_request_error', 'parameter_unknown', 'force');
  });
  describe('bad input that reached a 500 or changed data before: refused in the envelope, changing nothing', () => {
    /** `{"a": … "x" …}` this many levels deep, written as text (JSON.stringify itself would overflow). */
    const deep = (levels: number) => `${'{"a":'.repeat(levels)}"x"${'}'.repeat(levels)}`;
    const LEVELS = 8_000;

    it.each([
      [
        'a string field holding 8,000 levels of objects',
        '/v1/webhooks',
        `{"url":${deep(LEVELS)},"events":["dispatch.completed"]}`,
        'url.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a',
      ],
      [
        'a nested field holding 8,000 levels',
        '/v1/campaigns',
        `{"channel":"meta_ads","campaign":{"name":"n","objective":"conversion","budget":{"amount_micros":1,"type":"daily","currency":${deep(LEVELS)}},"schedule":{"start_at":"2026-12-01T09:00:00Z","timezone":"UTC"}}}`,
        'campaign.budget.currency.a.a.a.a.a.a.a.a.a.a.a.a.a',
      ],
      [
        'an array 8,000 levels deep',
        '/v1/webhooks',
        `{"url":"https://93.184.216.34/h","events":${'['.repeat(LEVELS)}${']'.repeat(LEVELS)}}`,
        'events.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0',
      ],
    ])('%s: 400 parameter_invalid', async (_, path, body, param) =>
      expectError(await partner.call('POST', path, body), 400, 'invalid_request_error', 'parameter_invalid', param),
    );

    it.each(['valueOf', 'toString', 'constructor', 'hasOwnProperty', '__proto__', '__defineGetter__'])(
      'a field named %s (an Object.prototype member): 400 parameter_unknown',
      async (name) => {
        const body = `{"url":"https://example.com/h","events":["dispatch.completed"],${JSON.stringify(name)}:null}`;
        expectError(await partner.call('POST', '/v1/webhooks', body), 400, 'invalid_request_error', 'parameter_unknown', name);
        const nested = `{"channel":"meta_ads","campaign":{"name":"n","objective":"conversion","budget":{"amount_micros":1,"currency":"USD","type":"daily",${JSON.stringify(name)}:1},"schedule":{"start_at":"2026-12-01T09:00:00Z","timezone":"UTC"}}}`;
        expectError(await partner.call('POST', '/v1/campaigns', nested), 400, 'invalid_request_error', 'parameter_unknown', `campaign.budget.${name}`);
      },
    );

    it('a PATCH of a webhook endpoint refused for such a field changes nothing of it', async () => {
      const created = await partner.post('/v1/webhooks', { url: 'https://93.184.216.34/before', events: ['dispatch.completed'] });
      expect(created.status).toBe(200);
      const endpoint = created.body.data;
      for (const name of ['valueOf', 'constructor', '__proto__']) {
        const body = `{"url":"https://93.184.216.34/after","events":["dispatch.failed"],"enabled":false,${JSON.stringify(name)}:{}}`;
        expectError(await partner.call('PATCH', `/v1/webhooks/${endpoint.id}`, body), 400, 'invalid_request_error', 'parameter_unknown', name);
      }
      expect((await partner.get(`/v1/webhooks/${endpoint.id}`)).body.data).toMatchObject({
        url: 'https://93.184.216.34/before',
        events: ['dispatch.completed'],
        enabled: true,
      });
    });
  });

  it.each([
    ['a control character in a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\u0001b\r\n\r\n'],
    ['a malformed request line', 'GET /v1/account HTTP/1.1 extra\r\nHost: x\r\n\r\n'],
    ['headers too large', `GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`],
  ])("answers a request Node's parser refuses (%s) in the envelope, with its request id", async (_, raw) => {
    const { port } = new URL(service.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.end(raw));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('utf8')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    const parsed = JSON.parse(body);
    expect(parsed).toEqual({
      success: false,
      error: { type: 'invalid_request_error', code: 'parameter_invalid', message: expect.any(String) },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(head).toContain(`X-Request-Id: ${parsed.request_id}`);
  });

  it('url_invalid', async () =>
    expectError(await partner.post('/v1/webhooks', { url: 'not a url', events: ['dispatch.completed'] }), 400, 'invalid_request_error', 'url_invalid', 'url'));
  it('url_not_https', async () =>
    expectError(
      await partner.post('/v1/webhooks', { url: 'http://example.com/h', events: ['dispatch.completed'] }),
      400,
      'invalid_request_error',
      'url_not_https',
      'url',
    ));
  it.each(['https://127.0.0.1/h', 'https://localhost/h', 'https://169.254.169.254/latest/meta-data', 'https://10.0.0.8/h', 'https://[::1]/h'])(
    'url_forbidden_host for %s',
    async (url) =>
      expectError(await partner.post('/v1/webhooks', { url, events: ['dispatch.completed'] }), 400, 'invalid_request_error', 'url_forbidden_host', 'url'),
  );
  it('event_unknown', async () =>
    expectError(
      await partner.post('/v1/webhooks', { url: 'https://example.com/h', events: ['dispatch.teleported'] }),
      400,
      'invalid_request_error',
      'event_unknown',
      'events.0',
    ));
  it('api_key_missing', async () => expectError(await new PartnerClient(service.url).get('/v1/account'), 401, 'authentication_error', 'api_key_missing'));
  it('api_key_invalid', async () =>
    expectError(await new PartnerClient(service.url, 'mk_live_' + 'A'.repeat(40)).get('/v1/account'), 401, 'authentication_error', 'api_key_invalid'));
  it('api_key_revoked', async () => {
    const spare = await admin.post(`/admin/v1/accounts/${keys.accountId}/keys`, { mode: 'test' });
    await admin.delete(`/admin/v1/keys/${spare.body.data.id}`);
    expectError(await new PartnerClient(service.url, spare.body.data.key).get('/v1/account'), 401, 'authentication_error', 'api_key_revoked');
  });
  it('insufficient_credits', async () => {
    const account = await admin.post('/admin/v1/accounts', { name: 'Broke', credits: 0 });
    const key = await admin.post(`/admin/v1/accounts/${account.body.data.id}/keys`, { mode: 'test' });
    expectError(
      await new PartnerClient(service.url, key.body.data.key).post('/v1/campaigns', sandboxCampaign()),
      402,
      'invalid_request_error',
      'insufficient_credits',
    );
  });
  it('resource_missing', async () =>
    expectError(await partner.get('/v1/dispatches/dsp_01JZZZZZZZZZZZZZZZZZZZZZZZ'), 404, 'invalid_request_error', 'resource_missing', 'id'));
  it('route_not_found', async () => expectError(await partner.get('/v2/campaigns'), 404, 'invalid_request_error', 'route_not_found'));
  it('route_not_found for a path that does not decode', async () =>
    expectError(await partner.get('/v1/dispatches/%E0%A4%A'), 404, 'invalid_request_error', 'route_not_found'));
  it('method_not_allowed', async () => {
    const answer = await partner.call('DELETE', '/v1/campaigns');
    expectError(answer, 405, 'invalid_request_error', 'method_not_allowed');
    expect(answer.headers.get('allow')).toBe('POST');
  });
  it('dispatch_not_retryable', async () => {
    const launch = await partner.post('/v1/campaigns', sandboxCampaign());
    await eventually(async () => (await partner.get(`/v1/dispatches/${launch.body.data.id}`)).body.data.status === 'completed');
    expectError(await partner.post(`/v1/dispatches/${launch.body.data.id}/retry`), 409, 'invalid_request_error', 'dispatch_not_retryable');
  });
  it('payload_too_large', async () => {
    const body = sandboxCampaign();
    body.campaign.name = 'x'.repeat(70 * 1024);
    expectError(await partner.post('/v1/campaigns', body), 413, 'invalid_request_error', 'payload_too_large');
  });
  it('unsupported_media_type', async () =>
    expectError(
      await partner.call('POST', '/v1/campaigns', 'channel=meta_ads', { 'Content-Type': 'application/x-www-form-urlencoded' }),
      415,
      'invalid_request_error',
      'unsupported_media_type',
    ));
  it('connection_required', async () => expectError(await live.post('/v1/campaigns', sandboxCampaign()), 422, 'invalid_request_error', 'connection_required'));

  describe('with a connection in the read model', () => {
    // Connections get their API in a later issue; until then the test seeds connection-service's
    // read model directly (the service reads it on every live launch).
    const seed = async (status: string) => {
      const store = SqliteReadStore.open(join(dataDir, 'read-models.sqlite'));
      const connections = store.collection('connections', { indexes: ['account_id', 'mode', 'channel', 'status'] });
      await connections.insert({
        id: `con_${status}`,
        account_id: keys.accountId,
        mode: 'live',
        channel: status === 'active' ? 'google_ads' : 'tiktok_ads',
        status,
      });
      await store.close();
    };
    it('connection_reauth_required', async () => {
      await seed('reauth_required');
      expectError(
        await live.post('/v1/campaigns', { ...sandboxCampaign(), channel: 'tiktok_ads' }),
        422,
        'invalid_request_error',
        'connection_reauth_required',
      );
    });
    it('channel_live_unavailable', async () => {
      await seed('active');
      expectError(await live.post('/v1/campaigns', { ...sandboxCampaign(), channel: 'google_ads' }), 422, 'invalid_request_error', 'channel_live_unavailable');
      // A token import on a channel missing such a setting is refused the same way, before any call: not blamed on the token.
      const imported = await live.post('/v1/connections', {
        channel: 'microsoft_ads',
        provider_account_id: '1234567890',
        credentials: { access_token: 'token' },
      });
      expectError(imported, 422, 'invalid_request_error', 'channel_live_unavailable');
      expect(imported.body.error.message).toContain('CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN');
    });
  });
});
