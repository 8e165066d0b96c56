/**
 * Operating the four apps over a real nats-server: one partner request followed through every
 * app's JSON logs by its request id (docs/operations.md, "Health, metrics, logs, retention, shutdown"), nothing but JSON lines even while NATS
 * goes away, and a webhook sender killed mid-send whose lease runs out before another run resends.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerHandle } from '@campaign-ops/testing/bus';
import { startNatsAsDeployed } from '../support/nats';
import { startHoldingReceiver } from '../support/holding-receiver';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { AppName, ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const APPS: AppName[] = ['api-gateway', 'dispatch-service', 'connection-service', 'webhook-delivery-service'];
const WEBHOOK_TIMEOUT_MS = 3000;
/** How long a claimed delivery stays leased (the worker's rule: the timeout plus 5 s). */
const LEASE_MS = WEBHOOK_TIMEOUT_MS + 5000;

/** The app's output lines that are not a JSON object with the documented fields. */
function notJsonLogLines(app: AppName, lines: string[]): string[] {
  return lines.filter((line) => {
    try {
      const entry = JSON.parse(line);
      return !(
        typeof entry.time === 'string' &&
        !Number.isNaN(Date.parse(entry.time)) &&
        typeof entry.level === 'string' &&
        entry.app === app &&
        typeof entry.msg === 'string'
      );
    } catch {
      return true;
    }
  });
}

describe('the four apps over NATS, operated', () => {
  let dataDir: string;
  let nats: NatsServerHandle;
  const apps = new Map<AppName, ServiceProcess>();
  const app = (name: AppName) => apps.get(name)!;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-operations-nats-'));
    nats = await startNatsAsDeployed();
    const common = {
      NATS_URL: nats.url,
      LOG_LEVEL: 'debug',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
      IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex'),
      CONNECTION_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    };
    const start = async (name: AppName, extra: Record<string, string> = {}) =>
      apps.set(name, await ServiceProcess.start(name, { ...common, ...nats.credentialsOf(name), DATA_DIR: join(dataDir, name), ...extra }));
    await Promise.all([start('connection-service'), start('dispatch-service'), start('webhook-delivery-service')]);
    await start('api-gateway', { ADMIN_TOKEN });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...apps.values()].map((service) => service.stop()));
    await nats?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("follows a partner's X-Request-Id (echoed as req_<id>) through the JSON logs of all four apps", async () => {
    const keys = await openAccountWithKeys(new PartnerClient(app('api-gateway').url, ADMIN_TOKEN));
    const test = new PartnerClient(app('api-gateway').url, keys.testKey);
    const live = new PartnerClient(app('api-gateway').url, keys.liveKey);
    const sent = { 'X-Request-Id': 'abc-123' };

    // Each reaches other services: webhook-delivery-service; dispatch-service and its executor;
    // dispatch-service, which asks connection-service before a live launch.
    const answers = [
      await test.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['dispatch.completed'] }, sent),
      await test.post('/v1/campaigns', sandboxCampaign('Followed'), sent),
      await live.post('/v1/campaigns', sandboxCampaign('Followed live'), sent),
    ];
    expect(answers.map((a) => [a.status, a.headers.get('x-request-id'), a.body.request_id])).toEqual([
      [200, 'req_abc-123', 'req_abc-123'],
      [200, 'req_abc-123', 'req_abc-123'],
      [422, 'req_abc-123', 'req_abc-123'],
    ]);

    const linesOf = (name: AppName) =>
      app(name)
        .outputLines()
        .stdout.filter((line) => line.includes('"req_abc-123"'));
    await eventually(
      async () => APPS.every((name) => linesOf(name).length > 0),
      15_000,
      `every app to log req_abc-123 (${APPS.map((n) => `${n}: ${linesOf(n).length}`).join(', ')})`,
    );
    for (const name of APPS) {
      for (const line of linesOf(name)) {
        expect({ app: name, entry: JSON.parse(line) }).toEqual({
          app: name,
          entry: expect.objectContaining({
            time: expect.any(String),
            level: expect.any(String),
            app: name,
            context: expect.any(String),
            msg: expect.any(String),
            request_id: 'req_abc-123',
          }),
        });
      }
    }
  });

  it('writes nothing but JSON log lines, on stdout and stderr, also while NATS goes away and comes back', async () => {
    nats.kill();
    await nats.restart();
    // Every app noticed and said so (whatever the format), and is back at work.
    const said = (name: AppName) =>
      Object.values(app(name).outputLines())
        .flat()
        .some((line) => line.includes('reconnected to NATS'));
    await eventually(async () => APPS.every(said), 20_000, 'every app to log its reconnection');
    const keys = await openAccountWithKeys(new PartnerClient(app('api-gateway').url, ADMIN_TOKEN));
    await eventually(
      async () => (await new PartnerClient(app('api-gateway').url, keys.testKey).post('/v1/campaigns', sandboxCampaign('After the blip'))).status === 200,
      20_000,
      'a launch after the restart',
    );

    for (const name of APPS) {
      const { stdout, stderr } = app(name).outputLines();
      expect({ app: name, notJson: notJsonLogLines(name, [...stdout, ...stderr]) }).toEqual({ app: name, notJson: [] });
    }
  });

  it('sends a delivery again once the lease of a sender killed mid-send has run out, and not before', async () => {
    // The first request is held open until the sender dies; later ones are answered at once.
    const receiver = await startHoldingReceiver((index) => (index === 0 ? null : 0));
    try {
      const keys = await openAccountWithKeys(new PartnerClient(app('api-gateway').url, ADMIN_TOKEN));
      const partner = new PartnerClient(app('api-gateway').url, keys.testKey);
      const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.accepted'] });
      await partner.post('/v1/campaigns', sandboxCampaign('Sender killed mid-send'));

      await eventually(async () => receiver.open() === 1, 15_000, 'the delivery to be under way');
      const sender = app('webhook-delivery-service');
      await sender.kill();
      await sender.start();

      const [first, second] = await eventually(
        async () => receiver.requests().length >= 2 && receiver.requests(),
        LEASE_MS + 15_000,
        'the delivery to be sent again',
      );
      expect(second.eventId).toBe(first.eventId);
      expect(second.deliveryId).toBe(first.deliveryId);
      // Not released by the restart: another replica may still hold a lease; it has to run out.
      expect(second.arrivedAt - first.arrivedAt).toBeGreaterThanOrEqual(LEASE_MS - 500);
      const delivery = await eventually(
        async () => {
          const [row] = (await partner.get(`/v1/webhooks/${endpoint.body.data.id}/deliveries`)).body.data;
          return row?.status === 'succeeded' && row;
        },
        10_000,
        'the delivery to be recorded as succeeded',
      );
      expect(delivery).toMatchObject({ event_id: first.eventId, last_error: null, last_status_code: 200 });
    } finally {
      await receiver.close();
    }
  });
  // Last: every test above ran the apps as deployed, each with its own NATS user.
  it('made no call its NATS permissions refuse (k8s/datastores/nats-auth.conf)', () => {
    expect(nats.permissionViolations()).toEqual([]);
  });
});
