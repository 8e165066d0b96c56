/**
 * Connections (docs/api.md#connections-and-oauth) as a partner's suite exercises them against the built standalone:
 * sandbox connections with a test key (create, list, read, replace, delete, reauthorize, the
 * simulated OAuth round and its callback), the one-active rule, scoping to account and mode,
 * validation, live connections against a loopback fake of Meta's Graph API (token import with the
 * ad account read, refusals, the OAuth round through the fake's consent page), the live key's
 * OAuth on a channel without a client, and `connection.active` / `connection.reauth_required` as
 * signed webhooks and in the Events API.
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcceptedWebhook, PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { followConsent, MetaAdsFake } from '../support/fake-networks';
import { assertAnswerMatchesDocument } from '../support/openapi-answers';
import { ApiAnswer, eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { freePort, ROOT, ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const BACK = 'https://partner.example/connected?tenant=7';

describe('connections, end to end', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let receiver: PartnerReceiver;
  let admin: PartnerClient;
  let keys: Awaited<ReturnType<typeof openAccountWithKeys>>;
  let partner: PartnerClient;
  let live: PartnerClient;
  let meta: MetaAdsFake;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-connections-'));
    receiver = await startPartnerReceiver();
    meta = await MetaAdsFake.start({
      accounts: [
        { id: '1234567890', currency: 'EUR', timezone: 'Europe/Berlin' },
        { id: '555', currency: 'USD', timezone: 'America/New_York' },
      ],
    });
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,200ms',
      ...meta.env(),
      NODE_EXTRA_CA_CERTS: meta.caCertPath,
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    keys = await openAccountWithKeys(admin, 'Connector');
    partner = new PartnerClient(service.url, keys.testKey);
    live = new PartnerClient(service.url, keys.liveKey);
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    await meta?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A fresh account's test key, so tests do not share channel slots. */
  const freshPartner = async (name: string) => new PartnerClient(service.url, (await openAccountWithKeys(admin, name)).testKey);
  const ok = (answer: ApiAnswer) => {
    if (answer.status !== 200) throw new Error(`expected 200, got ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body.data;
  };
  const expectError = (answer: ApiAnswer, status: number, code: string, param?: string) =>
    expect({ status: answer.status, code: answer.body.error?.code, ...(param ? { param: answer.body.error?.param } : {}) }).toEqual({
      status,
      code,
      ...(param ? { param } : {}),
    });
  /** The callback as a browser calls it: no key, redirects not followed. */
  const browse = async (url: string) => {
    const response = await fetch(url, { redirect: 'manual' });
    const body = (await response.json()) as Record<string, any>;
    await assertAnswerMatchesDocument(service.url, 'GET', url, response.status, response.headers.get('content-type'), body);
    return { status: response.status, location: response.headers.get('location'), body };
  };
  const callbackOf = (authorizationUrl: string) => {
    const url = new URL(authorizationUrl);
    return `${service.url}${url.pathname}${url.search}`;
  };

  describe('sandbox connections with a test key', () => {
    it('connects at once, with the simulated ad account, and never shows a token', async () => {
      const answer = await partner.post('/v1/connections', {
        channel: 'meta_ads',
        provider_account_id: 'act_1001',
        credentials: { access_token: 'EAAB-sandbox-secret' },
      });
      const connection = ok(answer);
      expect(connection).toEqual({
        id: expect.stringMatching(/^con_[0-9A-Z]{26}$/),
        channel: 'meta_ads',
        status: 'active',
        provider_account_id: 'act_1001',
        environment: 'sandbox',
        scopes: [],
        currency: 'USD',
        timezone: 'UTC',
        expires_at: null,
        reauth_reason: null,
        created_at: expect.stringMatching(/Z$/),
        updated_at: expect.stringMatching(/Z$/),
      });
      expect(JSON.stringify(answer.body)).not.toContain('EAAB-sandbox-secret');
      expect(ok(await partner.get(`/v1/connections/${connection.id}`))).toEqual(connection);
      const custom = ok(
        await partner.post('/v1/connections', { channel: 'tiktok_ads', provider_account_id: 'adv_1', sandbox: { currency: 'EUR', timezone: 'Europe/Berlin' } }),
      );
      expect(custom).toMatchObject({ status: 'active', currency: 'EUR', timezone: 'Europe/Berlin' });
    });

    it('lists newest first, filters by channel and status, and pages with starting_after', async () => {
      const lister = await freshPartner('Lister');
      const made: string[] = [];
      for (const channel of ['meta_ads', 'google_ads', 'snapchat_ads'])
        made.push(ok(await lister.post('/v1/connections', { channel, provider_account_id: `acc_${channel}` })).id);
      ok(await lister.delete(`/v1/connections/${made[1]}`));
      const first = await lister.get('/v1/connections?limit=2');
      expect([first.body.data.map((c: { id: string }) => c.id), first.body.has_more]).toEqual([[made[2], made[1]], true]);
      const second = await lister.get(`/v1/connections?limit=2&starting_after=${made[1]}`);
      expect([second.body.data.map((c: { id: string }) => c.id), second.body.has_more]).toEqual([[made[0]], false]);
      expect(ok(await lister.get('/v1/connections?channel=google_ads')).map((c: { id: string }) => c.id)).toEqual([made[1]]);
      expect(ok(await lister.get('/v1/connections?status=active')).map((c: { id: string }) => c.id)).toEqual([made[2], made[0]]);
      expectError(await lister.get('/v1/connections?limit=101'), 400, 'parameter_invalid', 'limit');
      expectError(await lister.get('/v1/connections?status=expired'), 400, 'parameter_invalid', 'status');
    });

    it("answers another account's connection, and the same account's in the other mode, exactly as one that does not exist", async () => {
      const owner = await freshPartner('Owner');
      const id = ok(await owner.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_owned' })).id;
      for (const [client, path] of [
        [partner, `/v1/connections/${id}`],
        [live, `/v1/connections/${id}`],
        [partner, '/v1/connections/con_01JBZ8KQ4T7W3X9M2N5P6R8S0V'],
      ] as const) {
        const answer = await client.get(path);
        expectError(answer, 404, 'resource_missing', 'id');
      }
      expectError(await partner.delete(`/v1/connections/${id}`), 404, 'resource_missing', 'id');
      expectError(await partner.post(`/v1/connections/${id}/reauthorize`, {}), 404, 'resource_missing', 'id');
      expect(ok(await partner.get('/v1/connections?limit=100')).map((c: { id: string }) => c.id)).not.toContain(id);
      expect(ok(await owner.get(`/v1/connections/${id}`)).status).toBe('active');
    });

    it('keeps one active connection per channel: the same provider account replaces, another answers 409 connection_exists', async () => {
      const slot = await freshPartner('Slot');
      const first = ok(await slot.post('/v1/connections', { channel: 'pinterest_ads', provider_account_id: 'pin_1' }));
      const other = await slot.post('/v1/connections', { channel: 'pinterest_ads', provider_account_id: 'pin_2' });
      expectError(other, 409, 'connection_exists', 'provider_account_id');
      expect(other.body.error.type).toBe('invalid_request_error');
      const replacement = ok(await slot.post('/v1/connections', { channel: 'pinterest_ads', provider_account_id: 'pin_1' }));
      expect(replacement.id).not.toBe(first.id);
      expect(ok(await slot.get(`/v1/connections/${first.id}`)).status).toBe('revoked');
      expect(ok(await slot.get('/v1/connections?channel=pinterest_ads&status=active')).map((c: { id: string }) => c.id)).toEqual([replacement.id]);
      ok(await slot.delete(`/v1/connections/${replacement.id}`));
      expect(ok(await slot.post('/v1/connections', { channel: 'pinterest_ads', provider_account_id: 'pin_2' })).status).toBe('active');
    });

    it('deletes: revoked, and deleting again answers the same', async () => {
      const id = ok(await partner.post('/v1/connections', { channel: 'reddit_ads', provider_account_id: 't2_1' })).id;
      const deleted = ok(await partner.delete(`/v1/connections/${id}`));
      expect(deleted).toMatchObject({ id, status: 'revoked' });
      expect(ok(await partner.delete(`/v1/connections/${id}`))).toEqual(deleted);
      expect(ok(await partner.get(`/v1/connections/${id}`)).status).toBe('revoked');
      expectError(await partner.post(`/v1/connections/${id}/reauthorize`, {}), 404, 'resource_missing', 'id');
    });
  });

  describe('OAuth', () => {
    it('runs a simulated round with a test key: pending with authorization_url, then the callback sends the browser back, once', async () => {
      const round = ok(await partner.post('/v1/connections', { channel: 'linkedin_ads', provider_account_id: '5001', redirect_uri: BACK }));
      expect(round).toMatchObject({ status: 'pending', currency: null, authorization_url: expect.stringContaining('/v1/connections/oauth/callback?') });
      expect(ok(await partner.get(`/v1/connections/${round.id}`))).not.toHaveProperty('authorization_url');

      const back = await browse(callbackOf(round.authorization_url));
      expect(back.status).toBe(302);
      const location = new URL(back.location!);
      expect(location.origin + location.pathname).toBe('https://partner.example/connected');
      expect(Object.fromEntries(location.searchParams)).toEqual({ tenant: '7', connection_id: round.id, status: 'active' });
      expect(back.body).toMatchObject({ success: true, data: { location: back.location } });
      expect(ok(await partner.get(`/v1/connections/${round.id}`))).toMatchObject({ status: 'active', currency: 'USD' });

      const again = await browse(callbackOf(round.authorization_url));
      expect([again.status, new URL(again.location!).searchParams.get('error'), new URL(again.location!).searchParams.get('connection_id')]).toEqual([
        302,
        'state_invalid',
        null,
      ]);
    });

    it('answers a state it never issued with 400 state_invalid in the envelope', async () => {
      const answer = await browse(`${service.url}/v1/connections/oauth/callback?state=never-issued&code=x`);
      expect([answer.status, answer.body.success, answer.body.error.code, answer.body.error.type]).toEqual([
        400,
        false,
        'state_invalid',
        'invalid_request_error',
      ]);
      expect((await browse(`${service.url}/v1/connections/oauth/callback`)).status).toBe(400);
    });

    it('answers 422 channel_not_configured to a live OAuth start on a channel without its client id and secret', async () => {
      expectError(
        await live.post('/v1/connections', { channel: 'google_ads', provider_account_id: '1234567890', redirect_uri: BACK }),
        422,
        'channel_not_configured',
        'channel',
      );
    });

    it('wants an https redirect_uri (http only for localhost)', async () => {
      expectError(
        await partner.post('/v1/connections', { channel: 'x_ads', provider_account_id: 'x1', redirect_uri: 'http://partner.example/back' }),
        400,
        'url_not_https',
        'redirect_uri',
      );
      expectError(
        await partner.post('/v1/connections', { channel: 'x_ads', provider_account_id: 'x1', redirect_uri: 'back' }),
        400,
        'url_invalid',
        'redirect_uri',
      );
      expect(
        ok(await partner.post('/v1/connections', { channel: 'x_ads', provider_account_id: 'x1', redirect_uri: 'http://localhost:8080/back' })).status,
      ).toBe('pending');
    });

    it('sends people back only where the account registered (no open redirect): another site or path is 400 redirect_uri_not_registered, and nothing is made', async () => {
      const before = (await live.get('/v1/connections')).body.data.length;
      for (const redirectUri of ['https://evil.example/connected', 'https://partner.example/elsewhere', 'http://localhost:8080/back'])
        expectError(
          await live.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_9', redirect_uri: redirectUri }),
          400,
          'redirect_uri_not_registered',
          'redirect_uri',
        );
      // A test key may use any http://localhost URL, and nothing else unregistered either.
      expectError(
        await partner.post('/v1/connections', { channel: 'x_ads', provider_account_id: 'x1', redirect_uri: 'https://evil.example/connected' }),
        400,
        'redirect_uri_not_registered',
        'redirect_uri',
      );
      expect((await live.get('/v1/connections')).body.data.length).toBe(before);
    });
  });

  describe('live connections (a loopback fake of Meta)', () => {
    it('imports a token: the ad account is read with it, the connection is active with its currency and time zone', async () => {
      const owner = await openAccountWithKeys(admin, 'Live importer');
      const client = new PartnerClient(service.url, owner.liveKey);
      const token = meta.issueAccessToken();
      const answer = await client.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_1234567890', credentials: { access_token: token } });
      expect(ok(answer)).toMatchObject({
        status: 'active',
        environment: 'live',
        currency: 'EUR',
        timezone: 'Europe/Berlin',
        provider_account_id: 'act_1234567890',
      });
      expect(JSON.stringify(answer.body)).not.toContain(token);
      expect(meta.lastRequest(/act_1234567890$/).headers.authorization ?? meta.lastRequest(/act_1234567890$/).query.access_token).toContain(token);
      // the test key of the same account sees none of it
      expect(ok(await new PartnerClient(service.url, owner.testKey).get('/v1/connections'))).toEqual([]);
    });

    it("gives dispatch-service the connection's token for a live launch", async () => {
      const client = new PartnerClient(service.url, (await openAccountWithKeys(admin, 'Live launcher')).liveKey);
      const token = meta.issueAccessToken();
      const connection = ok(
        await client.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_1234567890', credentials: { access_token: token } }),
      );
      const launch = sandboxCampaign('Live on Meta');
      launch.campaign.budget.currency = 'EUR';
      const dispatch = ok(await client.post('/v1/campaigns', launch));
      expect(dispatch.connection_id).toBe(connection.id);
      const settled = await eventually(
        async () => {
          const d = ok(await client.get(`/v1/dispatches/${dispatch.id}`));
          return d.status !== 'accepted' && d;
        },
        20_000,
        'the live dispatch to settle',
      );
      expect(settled).toMatchObject({ status: 'completed', provider_resource_id: expect.any(String) });
      const created = meta.lastRequest(/act_1234567890\/campaigns$/);
      expect(created.headers.authorization ?? created.query.access_token ?? JSON.stringify(created.body)).toContain(token);
    });

    it('answers credentials_invalid, provider_account_unreachable and provider_unavailable as the network decides', async () => {
      const client = new PartnerClient(service.url, (await openAccountWithKeys(admin, 'Live refusals')).liveKey);
      const connect = (token: string, account = 'act_1234567890') =>
        client.post('/v1/connections', { channel: 'meta_ads', provider_account_id: account, credentials: { access_token: token } });
      expectError(await connect('forged-token'), 400, 'credentials_invalid', 'credentials.access_token');
      const denied = meta.issueAccessToken();
      meta.denyAccount('1234567890', denied);
      expectError(await connect(denied), 400, 'provider_account_unreachable', 'provider_account_id');
      meta.failNext(1, 503);
      const down = await connect(meta.issueAccessToken());
      expectError(down, 502, 'provider_unavailable');
      expect(down.body.error.type).toBe('api_error');
      expect(ok(await client.get('/v1/connections'))).toEqual([]);
    });

    it("runs an OAuth round through the network's consent page, and the new connection replaces the imported one", async () => {
      const owner = await openAccountWithKeys(admin, 'Live OAuth');
      const client = new PartnerClient(service.url, owner.liveKey);
      const imported = ok(
        await client.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_555', credentials: { access_token: meta.issueAccessToken() } }),
      );
      const round = ok(await client.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_555', redirect_uri: BACK }));
      const consent = new URL(round.authorization_url);
      expect(consent.origin).toBe(meta.url);
      expect(consent.searchParams.get('client_id')).toBe(meta.clientId);
      expect(consent.searchParams.get('redirect_uri')).toBe(`http://localhost:${service.port}/v1/connections/oauth/callback`);

      const { location } = await followConsent(round.authorization_url);
      const back = await browse(`${service.url}${location.pathname}${location.search}`);
      expect(back.status).toBe(302);
      expect(Object.fromEntries(new URL(back.location!).searchParams)).toEqual({ tenant: '7', connection_id: round.id, status: 'active' });
      expect(ok(await client.get(`/v1/connections/${round.id}`))).toMatchObject({
        status: 'active',
        currency: 'USD',
        timezone: 'America/New_York',
        scopes: expect.arrayContaining([expect.any(String)]),
      });
      expect(ok(await client.get(`/v1/connections/${imported.id}`)).status).toBe('revoked');
      const again = await browse(`${service.url}${location.pathname}${location.search}`);
      expect(new URL(again.location!).searchParams.get('error')).toBe('state_invalid');
    });

    it('sends the browser back with error=access_denied when the person declines', async () => {
      const client = new PartnerClient(service.url, (await openAccountWithKeys(admin, 'Live decline')).liveKey);
      const round = ok(await client.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_1234567890', redirect_uri: BACK }));
      meta.denyNextConsent();
      const { location } = await followConsent(round.authorization_url);
      const back = await browse(`${service.url}${location.pathname}${location.search}`);
      expect(new URL(back.location!).searchParams.get('error')).toBe('access_denied');
      expect(ok(await client.get(`/v1/connections/${round.id}`)).status).toBe('pending');
    });
  });

  describe('validation', () => {
    it.each<[string, string, string, Record<string, unknown>]>([
      ['a channel not in the catalog', 'parameter_invalid', 'channel', { channel: 'myspace_ads', provider_account_id: 'a' }],
      ['no provider account', 'parameter_missing', 'provider_account_id', { channel: 'meta_ads' }],
      [
        'credentials without the access token',
        'parameter_missing',
        'credentials.access_token',
        { channel: 'meta_ads', provider_account_id: 'a', credentials: { refresh_token: 'r' } },
      ],
      [
        'an unknown credentials field',
        'parameter_unknown',
        'credentials.secret',
        { channel: 'meta_ads', provider_account_id: 'a', credentials: { access_token: 't', secret: 's' } },
      ],
      [
        'an expiry that is not UTC',
        'parameter_invalid',
        'credentials.expires_at',
        { channel: 'meta_ads', provider_account_id: 'a', credentials: { access_token: 't', expires_at: 'tomorrow' } },
      ],
      [
        'a sandbox currency that is not ISO 4217',
        'parameter_invalid',
        'sandbox.currency',
        { channel: 'meta_ads', provider_account_id: 'a', sandbox: { currency: 'usd' } },
      ],
      ['an unknown field', 'parameter_unknown', 'token', { channel: 'meta_ads', provider_account_id: 'a', token: 't' }],
      [
        'credentials and redirect_uri both',
        'parameter_invalid',
        'redirect_uri',
        { channel: 'meta_ads', provider_account_id: 'a', credentials: { access_token: 't' }, redirect_uri: BACK },
      ],
    ])('answers %s with %s at %s', async (_, code, param, body) => expectError(await partner.post('/v1/connections', body), 400, code, param));

    it('wants credentials or redirect_uri with a live key, and no sandbox account', async () => {
      expectError(await live.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_1' }), 400, 'parameter_missing', 'credentials');
      expectError(
        await live.post('/v1/connections', {
          channel: 'meta_ads',
          provider_account_id: 'act_1',
          credentials: { access_token: 't' },
          sandbox: { currency: 'EUR' },
        }),
        400,
        'parameter_invalid',
        'sandbox',
      );
    });
  });

  describe('partner events', () => {
    it('sends connection.active as a signed webhook and keeps it for GET /v1/events; [sandbox:reauth] brings connection.reauth_required, and reauthorizing makes it active again', async () => {
      const account = await openAccountWithKeys(admin, 'Listener');
      const listener = new PartnerClient(service.url, account.testKey);
      const endpoint = ok(await listener.post('/v1/webhooks', { url: receiver.url, events: ['connection.active', 'connection.reauth_required'] }));
      receiver.addSecret(endpoint.signing_secret);

      const connection = ok(await listener.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_2002' }));
      const ofThis = (event: string) => (e: AcceptedWebhook) => e.body.event === event && e.body.data.connection_id === connection.id;
      const [active] = await receiver.waitFor(ofThis('connection.active'), 20_000);
      expect(active.body).toEqual({
        id: expect.stringMatching(/^evt_/),
        event: 'connection.active',
        timestamp: expect.any(String),
        data: { connection_id: connection.id, channel: 'meta_ads', status: 'active', provider_account_id: 'act_2002', environment: 'sandbox' },
      });
      expect(active.headers['x-service-signature']).toBe('sha256=' + createHmac('sha256', endpoint.signing_secret).update(active.rawBody).digest('hex'));
      const listed = await eventually(
        async () => ok(await listener.get('/v1/events?type=connection.active')).find((e: { id: string }) => e.id === active.body.id),
        10_000,
        'the event in GET /v1/events',
      );
      expect(listed).toEqual(active.body);
      expect(ok(await partner.get('/v1/events?type=connection.active&limit=100')).map((e: { id: string }) => e.id)).not.toContain(active.body.id);

      // dispatch-service reports the refusal of [sandbox:reauth] to connection-service
      ok(await listener.post('/v1/campaigns', sandboxCampaign('Expired [sandbox:reauth]')));
      const [required] = await receiver.waitFor(ofThis('connection.reauth_required'), 20_000);
      expect(required.body.data).toEqual({
        connection_id: connection.id,
        channel: 'meta_ads',
        status: 'reauth_required',
        provider_account_id: 'act_2002',
        environment: 'sandbox',
        reason: expect.any(String),
      });
      expect(ok(await listener.get(`/v1/connections/${connection.id}`))).toMatchObject({ status: 'reauth_required', reauth_reason: required.body.data.reason });

      expect(ok(await listener.post(`/v1/connections/${connection.id}/reauthorize`, {}))).toMatchObject({
        id: connection.id,
        status: 'active',
        reauth_reason: null,
      });
      await receiver.waitFor(ofThis('connection.active'), 20_000, 2);
    }, 60_000);
  });

  it('refuses to start connection-service without CONNECTION_ENCRYPTION_KEY, naming it', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'apps', 'connection-service', 'src', 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        DATA_DIR: mkdtempSync(join(tmpdir(), 'campaign-ops-nokey-')),
        NATS_URL: `nats://127.0.0.1:${await freePort()}`,
        PORT: String(await freePort()),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(output).toMatch(/cannot start: CONNECTION_ENCRYPTION_KEY is required/);
  });
});
