import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { ServiceConfig } from '@campaign-ops/service-runtime';
import { PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { WebhookSender } from '@campaign-ops/webhook-sender';
import { DeliveryLoop } from './delivery-loop';
import { deliveriesOf } from './delivery-store';
import { DeliveryWorker } from './delivery-worker';
import { EndpointHealth } from './endpoint-health';
import { EndpointStore } from './endpoint-store';
import { dueDeliveryOf, endpointViewAt } from './testing/stored-delivery';

const SECRET = 'whsec_deliveryFairnessSpec0123456789';
const BACKLOG = 300;
const HEALTHY_EVENTS = 100;
/** The bound on a healthy endpoint's deliveries while another endpoint is failing. */
const HEALTHY_WITHIN_MS = 2000;

/** A partner that answers 503 after 500 ms while it is down, and 200 at once after. */
async function startOutage(): Promise<{ url: string; recover: () => void; delivered: Set<string>; close: () => Promise<void> }> {
  let down = true;
  const delivered = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (!down) {
        delivered.add(String(req.headers['x-service-event-id']));
        res.writeHead(200).end();
        return;
      }
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.writeHead(503).end();
      }, 500);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    recover: () => (down = false),
    delivered,
    close: async () => {
      timers.forEach(clearTimeout);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const until = async (condition: () => boolean, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

describe('DeliveryLoop, one endpoint failing slowly', () => {
  let dir: string;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let endpoints: EndpointStore;
  let healthy: PartnerReceiver;
  let outage: Awaited<ReturnType<typeof startOutage>>;
  let loop: DeliveryLoop;
  const sender = new WebhookSender();
  const secrets = SecretBox.fromHexKey(SecretBox.generateHexKey());

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'delivery-fairness-'));
    events = SqliteEventStore.open(join(dir, 'events.sqlite'));
    reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    endpoints = new EndpointStore(events, reads);
    healthy = await startPartnerReceiver({ secret: SECRET });
    outage = await startOutage();
    const worker = new DeliveryWorker(
      deliveriesOf(reads),
      endpoints,
      secrets,
      new EndpointHealth(reads, endpoints, { disableAfterMs: 5 * 86_400_000 }),
      {
        timeoutMs: 2000,
        retrySchedule: Array(10).fill(250),
        policy: { allowHttp: true, allowPrivateNetworks: true },
        userAgent: 'campaign-ops-webhooks/0.0.0-test',
      },
      sender,
    );
    loop = new DeliveryLoop(worker, { webhook: { concurrency: 16, endpointConcurrency: 4 } } as ServiceConfig);
  });

  afterAll(async () => {
    await loop?.stop();
    await sender.close();
    await healthy?.close();
    await outage?.close();
    await events?.close();
    await reads?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function endpointAt(url: string): Promise<string> {
    const view = endpointViewAt(url, secrets.seal(SECRET));
    await endpoints.views.upsert(view, 0);
    return view.id;
  }

  /** Stores one delivery of a new event, as fan-out does, and tells the loop; returns the event id. */
  async function deliver(endpointId: string): Promise<string> {
    const delivery = dueDeliveryOf({ id: endpointId, account_id: 'acct' });
    await deliveriesOf(reads).insert(delivery);
    loop.kick([endpointId]);
    return delivery.event_id;
  }

  it('delivers to a healthy endpoint promptly, and the failing one gets every event once it recovers', async () => {
    const failingId = await endpointAt(outage.url);
    const healthyId = await endpointAt(healthy.url);
    const failingEvents: string[] = [];
    for (let i = 0; i < BACKLOG; i++) failingEvents.push(await deliver(failingId));
    // Healthy, but not instant: it answers in 100 ms, so it needs lanes of its own to keep up.
    healthy.delayNext(HEALTHY_EVENTS, 100);
    loop.start();

    // While the backlog is failing, the healthy endpoint's events come in bursts, as a catalogue sync sends them.
    const sentAt = new Map<string, number>();
    for (let burst = 0; burst < HEALTHY_EVENTS / 20; burst++) {
      for (let i = 0; i < 20; i++) {
        sentAt.set(await deliver(healthyId), Date.now());
        failingEvents.push(await deliver(failingId));
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await healthy.waitFor(() => true, 5000, HEALTHY_EVENTS);

    const waits = healthy.events().map((event) => event.receivedAt.getTime() - (sentAt.get(event.body.id) as number));
    expect(waits).toHaveLength(HEALTHY_EVENTS);
    expect(Math.max(...waits)).toBeLessThan(HEALTHY_WITHIN_MS);
    expect(outage.delivered.size).toBe(0); // it was still down all along

    outage.recover();
    await until(() => failingEvents.every((id) => outage.delivered.has(id)), 20_000, `all ${failingEvents.length} events at the recovered endpoint`);
  }, 40_000);
});
