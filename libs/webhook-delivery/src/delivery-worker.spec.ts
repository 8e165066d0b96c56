import dns, { type LookupAddress } from 'node:dns';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { UrlPolicy } from '@campaign-ops/url-guard';
import { Delivery } from '@campaign-ops/webhook-domain';
import { PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { WebhookSender } from '@campaign-ops/webhook-sender';
import { deliveriesOf } from './delivery-store';
import { DeliveryWorker } from './delivery-worker';
import { EndpointHealth } from './endpoint-health';
import { EndpointStore } from './endpoint-store';
import { dueDeliveryOf, endpointViewAt } from './testing/stored-delivery';

const USER_AGENT = 'campaign-ops-webhooks/0.0.0-test';
const SECRET = 'whsec_deliveryWorkerSpec0123456789ab';
/** A partner's host that passed registration and now resolves to loopback (DNS rebinding). */
const REBOUND_HOST = 'rebound.partner.example';

/**
 * The send-time SSRF check: whatever an endpoint's URL says now, the worker sends only where the
 * deployment's policy allows, judged again at each attempt (the host may have changed since the
 * URL was checked at registration).
 */
describe('DeliveryWorker, at send time', () => {
  let dir: string;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let endpoints: EndpointStore;
  let receiver: PartnerReceiver;
  const secrets = SecretBox.fromHexKey(SecretBox.generateHexKey());
  const sender = new WebhookSender();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'delivery-worker-'));
    events = SqliteEventStore.open(join(dir, 'events.sqlite'));
    reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    endpoints = new EndpointStore(events, reads);
    receiver = await startPartnerReceiver({ secret: SECRET });
    // DNS is outside the system: this name now answers 127.0.0.1, every other name resolves as usual.
    const realLookup = dns.lookup;
    jest.spyOn(dns, 'lookup').mockImplementation(((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
      if (hostname !== REBOUND_HOST) return (realLookup as Function)(hostname, options, callback);
      const answer: LookupAddress[] = [{ address: '127.0.0.1', family: 4 }];
      setImmediate(() => (options.all ? callback(null, answer) : callback(null, answer[0].address, answer[0].family)));
    }) as unknown as typeof dns.lookup);
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await sender.close();
    await receiver?.close();
    await events?.close();
    await reads?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const workerWith = (policy: UrlPolicy) =>
    new DeliveryWorker(
      deliveriesOf(reads),
      endpoints,
      secrets,
      new EndpointHealth(reads, endpoints, { disableAfterMs: 5 * 86_400_000 }),
      {
        timeoutMs: 2000,
        retrySchedule: [60_000],
        policy,
        userAgent: USER_AGENT,
      },
      sender,
    );

  /** An endpoint whose view now points at `url`, and one due delivery to it: what a worker finds in the store. */
  async function dueDeliveryTo(url: string): Promise<string> {
    const view = endpointViewAt(url, secrets.seal(SECRET));
    await endpoints.views.upsert(view, 0);
    const delivery = dueDeliveryOf(view);
    await deliveriesOf(reads).insert(delivery);
    return delivery.id;
  }

  const deliveryOf = async (id: string) => (await deliveriesOf(reads).get(id)) as Delivery;
  const receivedFor = (deliveryId: string) => receiver.requests().filter((r) => r.headers['x-service-delivery-id'] === deliveryId);
  const urls = {
    'a name that now resolves to loopback (judged at connect time)': (port: string) => `http://${REBOUND_HOST}:${port}/hooks`,
    'localhost by name': (port: string) => `http://localhost:${port}/hooks`,
    'a loopback IP literal': (port: string) => `http://127.0.0.1:${port}/hooks`,
  };
  const cases = Object.entries(urls);
  const portOf = () => new URL(receiver.url).port;

  it.each(cases)('refuses to send to %s when private networks are not allowed, and records forbidden_host', async (_, url) => {
    const id = await dueDeliveryTo(url(portOf()));
    expect(await workerWith({ allowHttp: true, allowPrivateNetworks: false }).sendNextDue()).toBe(true);

    expect(receivedFor(id)).toEqual([]);
    expect(await deliveryOf(id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'forbidden_host', last_status_code: null, lease_until: null });
  });

  // The control: the same store, receiver and URLs do get delivered when the policy allows it, so
  // the refusals above come from the policy and from nothing else.
  it.each(cases)('sends to %s when private networks are allowed', async (_, url) => {
    const id = await dueDeliveryTo(url(portOf()));
    expect(await workerWith({ allowHttp: true, allowPrivateNetworks: true }).sendNextDue()).toBe(true);

    expect(receivedFor(id)).toEqual([expect.objectContaining({ signatureValid: true, problems: [], status: 200 })]);
    expect(await deliveryOf(id)).toMatchObject({ status: 'succeeded', attempts: 1, last_error: null, last_status_code: 200 });
  });

  it('says the endpoint has answered (its lane is free) once the partner answered, before the outcome is recorded', async () => {
    const id = await dueDeliveryTo(urls['a loopback IP literal'](portOf()));
    const worker = workerWith({ allowHttp: true, allowPrivateNetworks: true });
    const claimed = (await worker.claimDue())!;
    const seen: Array<{ requests: number; stored: Promise<Delivery | null> }> = [];
    // The SQLite store reads at the call itself: what it holds at that very moment.
    await worker.send(claimed, () => seen.push({ requests: receivedFor(id).length, stored: deliveriesOf(reads).get(id) }));
    expect(seen.map(({ requests }) => requests)).toEqual([1]);
    expect(await seen[0].stored).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await deliveryOf(id)).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('gives up a lease it holds (the delivery due now, for a claim), and not one it no longer holds; says whether a lease leaves time for an attempt', async () => {
    await dueDeliveryTo(urls['a loopback IP literal'](portOf()));
    const worker = workerWith({ allowHttp: true, allowPrivateNetworks: true });
    const claimed = (await worker.claimDue())!;
    // A lease for a send at once: the attempt's timeout (2 s here) and a 5 s margin. One for a
    // delivery in line holds two such, so that after waiting one it is sent with a whole one left.
    const now = Date.now();
    expect(Date.parse(worker.leaseUntil(new Date(now))) - now).toBe(7000);
    const inLine = { ...claimed, lease_until: worker.lineLeaseUntil(new Date(now)) };
    expect(worker.leaveTimeToSend(inLine, now)).toBe(true);
    expect(worker.leaveTimeToSend(inLine, now + 7000)).toBe(true);
    expect(worker.leaveTimeToSend(inLine, now + 7001)).toBe(false);
    expect(worker.leaveTimeToSend({ ...claimed, lease_until: null }, now)).toBe(false);
    expect(await worker.release({ ...claimed, lease_until: '2000-01-01T00:00:00.000Z' })).toBe(false);
    expect(await worker.release(claimed)).toBe(true);
    expect(await deliveryOf(claimed.id)).toMatchObject({ status: 'pending', lease_until: null, attempts: 0 });
    expect(Date.parse((await deliveryOf(claimed.id)).next_attempt_at!)).toBeLessThanOrEqual(Date.now());
    expect((await worker.claimDue())?.id).toBe(claimed.id);
  });
});
