/**
 * The four apps as separate processes, each with its own storage, talking only over a real
 * nats-server: the same partner-visible behaviour as the standalone process.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerHandle } from '@campaign-ops/testing/bus';
import { startNatsAsDeployed } from '../support/nats';
import { AcceptedWebhook, createTestCertificates, PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { createHmac } from 'node:crypto';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { scrapeMetrics } from '../support/metrics';
import { AppName, ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

describe('the four apps over NATS', () => {
  let dataDir: string;
  let nats: NatsServerHandle;
  let receiver: PartnerReceiver;
  const apps = new Map<AppName, ServiceProcess>();
  let gateway: ServiceProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-distributed-'));
    const certificates = await createTestCertificates(join(dataDir, 'tls'));
    receiver = await startPartnerReceiver({ tls: { key: certificates.key, cert: certificates.cert } });
    nats = await startNatsAsDeployed();
    const common = {
      NATS_URL: nats.url,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,2s',
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
      IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex'),
      CONNECTION_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      NODE_EXTRA_CA_CERTS: certificates.caCertPath,
      BUS_REQUEST_TIMEOUT_MS: '3000',
    };
    const start = async (app: AppName, extra: Record<string, string> = {}) =>
      apps.set(app, await ServiceProcess.start(app, { ...common, ...nats.credentialsOf(app), DATA_DIR: join(dataDir, app), ...extra }));
    await Promise.all([start('connection-service'), start('dispatch-service'), start('webhook-delivery-service')]);
    await start('api-gateway', { ADMIN_TOKEN });
    gateway = apps.get('api-gateway')!;
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...apps.values()].map((app) => app.stop()));
    await nats?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('launches, reads back and delivers signed webhooks across processes', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const partner = new PartnerClient(gateway.url, keys.testKey);
    const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.accepted', 'dispatch.completed'] });
    expect(endpoint.status).toBe(200);
    const secret: string = endpoint.body.data.signing_secret;
    receiver.addSecret(secret);
    const listed = await partner.get('/v1/webhooks');
    expect(listed.body.data).toEqual([expect.not.objectContaining({ signing_secret: expect.anything() })]);

    const launch = await partner.post('/v1/campaigns', sandboxCampaign('Across processes'));
    expect(launch.status).toBe(200);
    expect(launch.body.data).toMatchObject({ status: 'accepted', environment: 'sandbox', credits_charged: 1, resource_type: 'campaign', action: 'create' });
    const id = launch.body.data.id;
    expect((await partner.get(`/v1/dispatches/${id}`)).body.data.id).toBe(id);

    const ofDispatch = (event: string) => (e: AcceptedWebhook) => e.body.event === event && e.body.data.dispatch_id === id;
    await receiver.waitFor(ofDispatch('dispatch.accepted'), 20_000);
    const [completed] = await receiver.waitFor(ofDispatch('dispatch.completed'), 20_000);
    expect(completed.headers['x-service-signature']).toBe('sha256=' + createHmac('sha256', secret).update(completed.rawBody).digest('hex'));
    expect(completed.body.data).toMatchObject({ status: 'completed', channel: 'meta_ads', provider_resource_id: expect.stringMatching(/^sbx_meta_ads_\d+$/) });
    await eventually(async () => (await partner.get(`/v1/dispatches/${id}`)).body.data.status === 'completed');

    const deleted = await partner.delete(`/v1/webhooks/${endpoint.body.data.id}`);
    expect(deleted.body.data).toEqual({ id: endpoint.body.data.id, deleted: true });
  });

  it('asks connection-service over NATS before a live launch', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const live = await new PartnerClient(gateway.url, keys.liveKey).post('/v1/campaigns', sandboxCampaign());
    expect([live.status, live.body.error.code]).toEqual([422, 'connection_required']);
  });

  it('keeps launching and delivering after nats-server restarts, without restarting any app', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const partner = new PartnerClient(gateway.url, keys.testKey);
    const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.completed'] });
    receiver.addSecret(endpoint.body.data.signing_secret);

    nats.kill();
    await nats.restart();

    // The apps reconnect on their own; a partner retrying a 503 gets through within seconds.
    const launch = await eventually(
      async () => {
        const answer = await partner.post('/v1/campaigns', sandboxCampaign('After the restart'), { 'Idempotency-Key': 'after-nats-restart' });
        return answer.status === 200 && answer;
      },
      20_000,
      'a launch to succeed after the restart',
    );
    const id = launch.body.data.id;
    await receiver.waitFor((e: AcceptedWebhook) => e.body.event === 'dispatch.completed' && e.body.data.dispatch_id === id, 30_000);
    expect((await partner.get(`/v1/dispatches/${id}`)).body.data.status).toBe('completed');
    const withKey = (await partner.get('/v1/dispatches?limit=100')).body.data.filter(
      (d: { idempotency_key: string }) => d.idempotency_key === 'after-nats-restart',
    );
    expect(withKey.map((d: { id: string }) => d.id)).toEqual([id]);
    await partner.delete(`/v1/webhooks/${endpoint.body.data.id}`);
  });

  it('serves Prometheus metrics on every app', async () => {
    // What is measured happens here: a launch that completes and is delivered to an endpoint.
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const partner = new PartnerClient(gateway.url, keys.testKey);
    const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.completed'] });
    receiver.addSecret(endpoint.body.data.signing_secret);
    const id = (await partner.post('/v1/campaigns', sandboxCampaign('Measured'))).body.data.id;
    await receiver.waitFor((e: AcceptedWebhook) => e.body.event === 'dispatch.completed' && e.body.data.dispatch_id === id, 20_000);

    const text = async (app: AppName) => scrapeMetrics(apps.get(app)!);
    expect(await text('api-gateway')).toMatch(/^http_requests_total\{method="POST",route="\/v1\/campaigns",status="200"\} [1-9]/m);
    // The read model and the attempt counter are updated just after the send the receiver saw.
    const dispatch = await eventually(
      async () => {
        const metrics = await text('dispatch-service');
        return /^dispatches\{status="completed"\} [1-9]/m.test(metrics) && metrics;
      },
      10_000,
      'a completed dispatch in the dispatch-service metrics',
    );
    expect(dispatch).toMatch(/^bus_consumer_pending_messages\{durable="dispatch-executor"\} \d+/m);
    expect(dispatch).toMatch(/^event_processor_checkpoint_timestamp_seconds\{processor="dispatch-relay"\} \d+/m);
    await eventually(
      async () => {
        const metrics = await text('webhook-delivery-service');
        return (
          /^webhook_deliveries\{status="succeeded"\} [1-9]/m.test(metrics) &&
          /^webhook_delivery_attempts_total\{outcome="succeeded"\} [1-9]/m.test(metrics) &&
          metrics
        );
      },
      10_000,
      'a succeeded delivery and attempt in the webhook-delivery-service metrics',
    );
    expect(await text('connection-service')).toMatch(/^process_cpu_seconds_total/m);
    await partner.delete(`/v1/webhooks/${endpoint.body.data.id}`);
  });

  it('serves /metrics on METRICS_PORT only: the API port answers 404 there (partners included), the metrics port nothing else', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const failures: string[] = [];
    for (const [name, app] of apps) {
      expect(app.metricsPort).not.toBe(app.port);
      const onApiPort = await fetch(`${app.url}/metrics`);
      if (onApiPort.status !== 404) failures.push(`${name}: GET /metrics on the API port answered ${onApiPort.status}`);
      const elsewhere = await fetch(`${app.metricsUrl}/healthz`);
      if (elsewhere.status !== 404) failures.push(`${name}: GET /healthz on the metrics port answered ${elsewhere.status}`);
      const scraped = await fetch(`${app.metricsUrl}/metrics`);
      if (scraped.status !== 200 || !/^text\/plain; version=0\.0\.4/.test(scraped.headers.get('content-type') ?? ''))
        failures.push(`${name}: GET /metrics on the metrics port answered ${scraped.status} ${scraped.headers.get('content-type')}`);
      if (!/^process_cpu_seconds_total /m.test(await scraped.text())) failures.push(`${name}: no process_cpu_seconds_total on the metrics port`);
    }
    // A partner with a valid key, through the gateway: nothing to see at /metrics.
    const withKey = await new PartnerClient(gateway.url, keys.testKey).get('/metrics');
    if (withKey.status !== 404) failures.push(`api-gateway: GET /metrics with an API key answered ${withKey.status}`);
    expect(failures).toEqual([]);
  });

  it('makes one dispatch, charged once, when a partner retries a 503 with the same Idempotency-Key', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const partner = new PartnerClient(gateway.url, keys.testKey);
    const dispatchService = apps.get('dispatch-service')!;
    const key = { 'Idempotency-Key': 'retry-after-503' };
    dispatchService.pause();
    let first;
    try {
      first = await partner.post('/v1/campaigns', sandboxCampaign('Hung'), key);
    } finally {
      dispatchService.resume();
    }
    // The gateway gave up, but the request was delivered and is made once the service runs again.
    expect([first.status, first.body.error.code]).toEqual([503, 'service_unavailable']);
    const retried = await eventually(
      async () => {
        const answer = await partner.post('/v1/campaigns', sandboxCampaign('Hung'), key);
        return answer.status === 200 && answer;
      },
      20_000,
      'the retry to succeed',
    );
    await eventually(async () => (await partner.get(`/v1/dispatches/${retried.body.data.id}`)).body.data.status === 'completed');
    const listed = (await partner.get('/v1/dispatches')).body.data;
    expect(listed.map((d: { id: string }) => d.id)).toEqual([retried.body.data.id]);
    expect((await partner.get('/v1/account')).body.data.credits_balance).toBe(999);
    const other = await partner.post('/v1/campaigns', sandboxCampaign('Not the same launch'), key);
    expect([other.status, other.body.error.code]).toEqual([409, 'idempotency_key_reused']);
  });

  it('answers 503 service_unavailable, with Retry-After, while dispatch-service is down', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(gateway.url, ADMIN_TOKEN));
    const partner = new PartnerClient(gateway.url, keys.testKey);
    const dispatchService = apps.get('dispatch-service')!;
    await dispatchService.stop();
    try {
      const answer = await partner.post('/v1/campaigns', sandboxCampaign());
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
      expect(answer.headers.get('retry-after')).toBe('1');
    } finally {
      await dispatchService.start();
    }
    const again = await partner.post('/v1/campaigns', sandboxCampaign());
    expect(again.status).toBe(200);
  });
  // Last: every test above ran the apps as deployed, each with its own NATS user.
  it('made no call its NATS permissions refuse (k8s/datastores/nats-auth.conf)', () => {
    expect(nats.permissionViolations()).toEqual([]);
  });
});
