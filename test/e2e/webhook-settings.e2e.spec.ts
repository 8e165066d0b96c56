/**
 * The webhook sender's settings, on the standalone process: WEBHOOK_TIMEOUT_MS (a late answer is a
 * failed attempt, retried), WEBHOOK_CONCURRENCY (deliveries in flight per process) and
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS (judged at every send, also for endpoints registered before).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { HoldingReceiver, startHoldingReceiver } from '../support/holding-receiver';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const TIMEOUT_MS = 1500;
const CONCURRENCY = 2;

interface DeliveryRow {
  id: string;
  event: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

describe('webhook settings', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let partnerReceiver: PartnerReceiver;
  let holding: HoldingReceiver | undefined;
  const settings = {
    ADMIN_TOKEN,
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_CONCURRENCY: String(CONCURRENCY),
    WEBHOOK_RETRY_SCHEDULE: '2s,2s,2s',
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-webhook-settings-'));
    partnerReceiver = await startPartnerReceiver();
    service = await ServiceProcess.start('standalone', { ...settings, DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  });

  afterAll(async () => {
    await service?.stop();
    await partnerReceiver?.close();
    await holding?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function newPartner(): Promise<PartnerClient> {
    const keys = await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN));
    return new PartnerClient(service.url, keys.testKey);
  }

  async function subscribe(partner: PartnerClient, url: string, events = ['dispatch.accepted']): Promise<string> {
    const endpoint = await partner.post('/v1/webhooks', { url, events });
    if (endpoint.status !== 200) throw new Error(`registering ${url} answered ${endpoint.status}: ${JSON.stringify(endpoint.body)}`);
    if (url === partnerReceiver.url) partnerReceiver.addSecret(endpoint.body.data.signing_secret);
    return endpoint.body.data.id;
  }

  const deliveriesOf = async (partner: PartnerClient, endpointId: string): Promise<DeliveryRow[]> =>
    (await partner.get(`/v1/webhooks/${endpointId}/deliveries`)).body.data;

  it('counts an answer later than WEBHOOK_TIMEOUT_MS as a failed attempt (last_error timeout) and retries it', async () => {
    const partner = await newPartner();
    const endpointId = await subscribe(partner, partnerReceiver.url);
    partnerReceiver.delayNext(1, TIMEOUT_MS + 3000);
    await partner.post('/v1/campaigns', sandboxCampaign('Answered late'));

    // Every state the delivery goes through, until it is done.
    const seen: string[] = [];
    const final = await eventually(
      async () => {
        const [delivery] = await deliveriesOf(partner, endpointId);
        if (!delivery) return false;
        const state = `${delivery.status} attempts=${delivery.attempts} last_error=${delivery.last_error}`;
        if (seen[seen.length - 1] !== state) seen.push(state);
        return delivery.status !== 'pending' && delivery;
      },
      20_000,
      'the delivery to be done',
    );

    expect(seen).toContain('pending attempts=1 last_error=timeout');
    expect(final).toMatchObject({ status: 'succeeded', attempts: 2, last_error: null });
    // Both attempts reached the partner: the first was given up on before it was answered.
    const [first, second] = partnerReceiver.requests().filter((r) => r.headers['x-service-delivery-id'] === final.id);
    expect(second.receivedAt.getTime() - first.receivedAt.getTime()).toBeLessThan(TIMEOUT_MS + 3000);
  });

  it('has at most WEBHOOK_CONCURRENCY deliveries in flight at once, and that many', async () => {
    const partner = await newPartner();
    // Each request is held a while (well within the timeout), so deliveries due together overlap.
    const receiver = (holding = await startHoldingReceiver(() => 500));
    const endpoints = 5;
    for (let i = 0; i < endpoints; i++) await subscribe(partner, receiver.url);
    await partner.post('/v1/campaigns', sandboxCampaign('Fanned out to five endpoints'));

    await eventually(
      async () => new Set(receiver.requests().map((r) => r.deliveryId)).size === endpoints && receiver.open() === 0,
      20_000,
      'every delivery to have been sent',
    );
    expect(receiver.mostOpen()).toBe(CONCURRENCY);
  });

  it('refuses, at send time, an endpoint registered while private networks were allowed, once they are not (forbidden_host)', async () => {
    const partner = await newPartner();
    const endpointId = await subscribe(partner, partnerReceiver.url, ['dispatch.accepted', 'dispatch.completed']);
    const before = partnerReceiver.requests().length;

    await service.stop();
    // The same data and port, without WEBHOOK_ALLOW_PRIVATE_NETWORKS: the boundary is on.
    service = new ServiceProcess('standalone', service.port, { ...settings, DATA_DIR: dataDir });
    await service.start();
    const launch = await partner.post('/v1/campaigns', sandboxCampaign('Behind the boundary'));
    expect(launch.status).toBe(200);

    // Both events were tried: the sender got as far as it ever would, and was refused.
    const tried = await eventually(
      async () => {
        const rows = await deliveriesOf(partner, endpointId);
        return rows.length === 2 && rows.every((d) => d.attempts >= 1) && rows;
      },
      20_000,
      'both deliveries to have been tried',
    );
    expect(tried.map((d) => [d.event, d.status, d.last_error]).sort()).toEqual([
      ['dispatch.accepted', 'pending', 'forbidden_host'],
      ['dispatch.completed', 'pending', 'forbidden_host'],
    ]);
    expect(partnerReceiver.requests().slice(before)).toEqual([]);
  });
});
