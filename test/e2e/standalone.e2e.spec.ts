/**
 * A partner's black-box test of everything docs/api.md shows, against the standalone process started
 * as `npm start` starts it, with the settings a partner's test run uses and an HTTPS receiver on
 * localhost whose CA the service trusts through NODE_EXTRA_CA_CERTS.
 */
import { createHmac } from 'node:crypto';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcceptedWebhook, createTestCertificates, PartnerReceiver, startPartnerReceiver, WebhookEnvelope } from '@campaign-ops/testing/webhook-sender';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

describe('standalone service, as a partner sees it', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let receiver: PartnerReceiver;
  let admin: PartnerClient;
  let anonymous: PartnerClient;
  let partner: PartnerClient;
  let keys: Awaited<ReturnType<typeof openAccountWithKeys>>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-'));
    const certificates = await createTestCertificates(join(dataDir, 'tls'));
    receiver = await startPartnerReceiver({ tls: { key: certificates.key, cert: certificates.cert } });
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: join(dataDir, 'service'),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,2s',
      NODE_EXTRA_CA_CERTS: certificates.caCertPath,
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    anonymous = new PartnerClient(service.url);
    keys = await openAccountWithKeys(admin, 'Acme Media');
    partner = anonymous.as(keys.testKey);
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('opens accounts and issues keys of both modes through the Admin API, shown once', async () => {
    expect(keys.accountId).toMatch(/^acct_/);
    expect(keys.testKey).toMatch(/^mk_test_[0-9A-Za-z]{32,}$/);
    expect(keys.liveKey).toMatch(/^mk_live_[0-9A-Za-z]{32,}$/);
    const account = await partner.get('/v1/account');
    expect(account.status).toBe(200);
    expect(account.body).toEqual({
      success: true,
      data: {
        id: keys.accountId,
        name: 'Acme Media',
        environment: 'sandbox',
        credits_balance: 1000,
        oauth_redirect_uris: ['https://partner.example/connected'],
      },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(account.headers.get('x-request-id')).toBe(account.body.request_id);
  });

  it('serves Prometheus metrics on METRICS_PORT, and answers 404 for /metrics on the API port (with a key too)', async () => {
    expect((await anonymous.get('/metrics')).status).toBe(404);
    expect((await partner.get('/metrics')).status).toBe(404);
    const scraped = await fetch(`${service.metricsUrl}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^http_requests_total\{method="GET",route="\/v1\/account",status="200"\} [1-9]/m);
  });

  it('refuses the Admin API without the admin token', async () => {
    const answer = await anonymous.as('not-the-token').post('/admin/v1/accounts', { name: 'x' });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ success: false, error: { type: 'authentication_error', code: 'api_key_invalid' } });
  });

  it('answers 401 in the envelope for a missing, an invalid and a revoked key', async () => {
    const missing = await anonymous.get('/v1/webhooks');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({
      success: false,
      error: { type: 'authentication_error', code: 'api_key_missing', message: expect.any(String) },
      request_id: expect.stringMatching(/^req_/),
    });
    const invalid = await anonymous.as('mk_test_' + 'x'.repeat(40)).get('/v1/webhooks');
    expect([invalid.status, invalid.body.error.code]).toEqual([401, 'api_key_invalid']);

    const spare = await admin.post(`/admin/v1/accounts/${keys.accountId}/keys`, { mode: 'test' });
    expect((await anonymous.as(spare.body.data.key).get('/v1/webhooks')).status).toBe(200);
    const revoked = await admin.delete(`/admin/v1/keys/${spare.body.data.id}`);
    expect(revoked.body.data).toEqual({ id: spare.body.data.id, revoked: true });
    const after = await anonymous.as(spare.body.data.key).get('/v1/webhooks');
    expect([after.status, after.body.error.code]).toEqual([401, 'api_key_revoked']);
  });

  it('registers a webhook endpoint, shows its secret only once, lists and deletes it', async () => {
    const created = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.completed'] });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      success: true,
      data: expect.objectContaining({
        id: expect.stringMatching(/^whk_/),
        url: receiver.url,
        events: ['dispatch.completed'],
        signing_secret: expect.stringMatching(/^whsec_/),
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      }),
      request_id: expect.stringMatching(/^req_/),
    });
    const id = created.body.data.id;
    const list = await partner.get('/v1/webhooks');
    const listed = list.body.data.find((e: { id: string }) => e.id === id);
    expect(listed).toMatchObject({ id, url: receiver.url, events: ['dispatch.completed'], created_at: created.body.data.created_at });
    expect(listed).not.toHaveProperty('signing_secret');
    expect(JSON.stringify(list.body)).not.toContain(created.body.data.signing_secret);

    const deleted = await partner.delete(`/v1/webhooks/${id}`);
    expect(deleted.body).toEqual({ success: true, data: { id, deleted: true }, request_id: expect.stringMatching(/^req_/) });
    expect((await partner.get('/v1/webhooks')).body.data.map((e: { id: string }) => e.id)).not.toContain(id);
    expect((await partner.delete(`/v1/webhooks/${id}`)).status).toBe(404);
  });

  it('refuses webhook URLs that are not https, and unknown events', async () => {
    const http = await partner.post('/v1/webhooks', { url: 'http://example.com/hooks', events: ['dispatch.completed'] });
    expect([http.status, http.body.error.code, http.body.error.param]).toEqual([400, 'url_not_https', 'url']);
    const unknown = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.exploded'] });
    expect([unknown.status, unknown.body.error.code]).toEqual([400, 'event_unknown']);
  });

  it('launches a sandbox campaign and delivers dispatch.accepted and dispatch.completed, signed', async () => {
    const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.accepted', 'dispatch.completed'] });
    const secret: string = endpoint.body.data.signing_secret;
    receiver.addSecret(secret);

    const launch = await partner.post('/v1/campaigns', sandboxCampaign('Spring sale'));
    expect(launch.status).toBe(200);
    expect(launch.body.success).toBe(true);
    expect(launch.body.request_id).toMatch(/^req_/);
    const dispatch = launch.body.data;
    expect(dispatch).toMatchObject({
      id: expect.stringMatching(/^dsp_/),
      status: 'accepted',
      channel: 'meta_ads',
      resource_type: 'campaign',
      action: 'create',
      environment: 'sandbox',
      credits_charged: 1,
    });

    // read-your-writes: found right after the POST
    const read = await partner.get(`/v1/dispatches/${dispatch.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data.id).toBe(dispatch.id);

    const ofThisDispatch = (name: string) => (e: AcceptedWebhook) => e.body.event === name && e.body.data.dispatch_id === dispatch.id;
    const [accepted] = await receiver.waitFor(ofThisDispatch('dispatch.accepted'), 20_000);
    const [completed] = await receiver.waitFor(ofThisDispatch('dispatch.completed'), 20_000);
    expect(accepted.body.data).toMatchObject({ dispatch_id: dispatch.id, status: 'accepted', channel: 'meta_ads' });
    expect(accepted.signatureValid).toBe(true);
    expect(completed.body).toEqual({
      id: expect.stringMatching(/^evt_/),
      event: 'dispatch.completed',
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      data: expect.objectContaining({
        dispatch_id: dispatch.id,
        channel: 'meta_ads',
        status: 'completed',
        provider_resource_id: expect.stringMatching(/^sbx_meta_ads_\d+$/),
      }),
    });
    // The signature, checked here exactly as docs/api.md#webhooks-and-signatures tells a receiver to.
    const expected = 'sha256=' + createHmac('sha256', secret).update(completed.rawBody).digest('hex');
    expect(completed.headers['x-service-signature']).toBe(expected);
    expect(completed.headers['x-service-event']).toBe('dispatch.completed');
    expect(completed.headers['x-service-timestamp']).toMatch(/^\d{10}$/);
    expect(completed.headers['x-service-event-id']).toBe(completed.body.id);
    expect(completed.headers['x-service-delivery-id']).toMatch(/^dlv_/);
    expect(completed.problems).toEqual([]);

    const after = await eventually(async () => {
      const answer = await partner.get(`/v1/dispatches/${dispatch.id}`);
      return answer.body.data.status === 'completed' && answer.body.data;
    });
    expect(after.provider_resource_id).toBe(completed.body.data.provider_resource_id);
    await partner.delete(`/v1/webhooks/${endpoint.body.data.id}`);

    // In one process the relays hand partner events to the fan-out, and a test key's work (done at
    // once) to the executor: the event store is the one durable log, and the bus carries neither.
    const bus = new Database(join(dataDir, 'service', 'bus.sqlite'), { readonly: true });
    const subjects = (bus.prepare('SELECT subject FROM bus_messages').all() as Array<{ subject: string }>).map(({ subject }) => subject);
    bus.close();
    expect(subjects.filter((subject) => subject.startsWith('evt.partner.') || subject.startsWith('evt.dispatch.'))).toEqual([]);
  });

  it('retries a delivery the receiver refused, on the configured schedule', async () => {
    const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.completed'] });
    receiver.addSecret(endpoint.body.data.signing_secret);
    receiver.failNext(1, 503);
    const launch = await partner.post('/v1/campaigns', sandboxCampaign('Retry me'));
    const id = launch.body.data.id;
    await receiver.waitFor((e) => e.body.event === 'dispatch.completed' && e.body.data.dispatch_id === id, 20_000);
    const attempts = receiver
      .requests()
      .map((r) => r.body as WebhookEnvelope | null)
      .filter((b): b is WebhookEnvelope => b !== null && b.data?.dispatch_id === id && b.event === 'dispatch.completed');
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(attempts.map((a) => a.id)).size).toBe(1);
    await partner.delete(`/v1/webhooks/${endpoint.body.data.id}`);
  });

  it('charges one credit per launch, answers 402 below one, and takes credit grants', async () => {
    const account = await admin.post('/admin/v1/accounts', { name: 'Frugal', credits: 1 });
    expect(account.body.data).toMatchObject({ name: 'Frugal', credits: { live: 1, test: 1 } });
    const key = await admin.post(`/admin/v1/accounts/${account.body.data.id}/keys`, { mode: 'test' });
    const frugal = anonymous.as(key.body.data.key);
    expect((await frugal.post('/v1/campaigns', sandboxCampaign())).status).toBe(200);
    expect((await frugal.get('/v1/account')).body.data.credits_balance).toBe(0);
    const broke = await frugal.post('/v1/campaigns', sandboxCampaign());
    expect(broke.status).toBe(402);
    expect(broke.body.error).toMatchObject({ type: 'invalid_request_error', code: 'insufficient_credits' });
    expect((await frugal.get('/v1/dispatches')).body.data).toHaveLength(1);

    const granted = await admin.post(`/admin/v1/accounts/${account.body.data.id}/credits`, { mode: 'test', amount: 5 });
    expect(granted.body.data.credits).toEqual({ live: 1, test: 5 });
    expect((await frugal.post('/v1/campaigns', sandboxCampaign())).status).toBe(200);
    expect((await frugal.get('/v1/account')).body.data.credits_balance).toBe(4);
  });

  it('needs a connection for a live launch', async () => {
    const live = await anonymous.as(keys.liveKey).post('/v1/campaigns', sandboxCampaign());
    expect(live.status).toBe(422);
    expect(live.body.error).toMatchObject({ type: 'invalid_request_error', code: 'connection_required' });
  });

  it('validates the campaign body with dotted params', async () => {
    const body = sandboxCampaign();
    body.campaign.budget.currency = 'usd';
    const answer = await partner.post('/v1/campaigns', body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      message: 'campaign.budget.currency must be a three-letter uppercase ISO 4217 code',
      param: 'campaign.budget.currency',
    });
    const unknown = await partner.post('/v1/campaigns', { ...sandboxCampaign(), extra: true });
    expect(unknown.body.error).toMatchObject({ code: 'parameter_unknown', param: 'extra' });
    const broken = await partner.call('POST', '/v1/campaigns', '{"channel":', {});
    expect([broken.status, broken.body.error.code]).toEqual([400, 'body_invalid_json']);
  });

  it('keeps live and sandbox apart, and accounts apart', async () => {
    const launch = await partner.post('/v1/campaigns', sandboxCampaign());
    const asLive = await anonymous.as(keys.liveKey).get(`/v1/dispatches/${launch.body.data.id}`);
    expect([asLive.status, asLive.body.error.code]).toEqual([404, 'resource_missing']);
    const other = await openAccountWithKeys(admin, 'Other');
    const asOther = await anonymous.as(other.testKey).get(`/v1/dispatches/${launch.body.data.id}`);
    expect([asOther.status, asOther.body.error.code]).toEqual([404, 'resource_missing']);
    expect((await anonymous.as(other.testKey).get('/v1/webhooks')).body.data).toEqual([]);
  });

  it('answers unknown routes and methods in the envelope', async () => {
    const route = await partner.get('/v1/nothing-here');
    expect([route.status, route.body.success, route.body.error.code]).toEqual([404, false, 'route_not_found']);
    const method = await partner.call('PUT', '/v1/campaigns', {});
    expect([method.status, method.body.error.code]).toEqual([405, 'method_not_allowed']);
  });
});
