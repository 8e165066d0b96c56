/**
 * One account's events are that account's alone, in the mode they happened in: webhooks reach
 * only its endpoints of that mode, and the Events API lists and reads only its own events,
 * filtered by type when asked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcceptedWebhook, PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
type Keys = Awaited<ReturnType<typeof openAccountWithKeys>>;
const EVENTS = ['dispatch.accepted', 'dispatch.completed', 'dispatch.failed'];

describe('accounts and modes kept apart', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let a: Keys;
  let b: Keys;
  /** A receiver per endpoint: A's test endpoint, A's live endpoint, B's test endpoint. */
  const receivers: Record<'aTest' | 'aLive' | 'bTest', PartnerReceiver> = {} as never;
  const endpoints: Record<keyof typeof receivers, string> = {} as never;

  const client = (key: string) => new PartnerClient(service.url, key);
  const launch = async (key: string, name: string): Promise<string> => {
    const answer = await client(key).post('/v1/campaigns', sandboxCampaign(name));
    expect(answer.status).toBe(200);
    return answer.body.data.id;
  };
  const webhookOf = (event: string, dispatchId: string) => (e: AcceptedWebhook) => e.body.event === event && e.body.data.dispatch_id === dispatchId;
  const dispatchIdsAt = (receiver: PartnerReceiver) =>
    receiver.requests().map((r) => (r.body as { data?: { dispatch_id?: string } } | null)?.data?.dispatch_id);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-isolation-'));
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,200ms',
    });
    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    [a, b] = await Promise.all([openAccountWithKeys(admin, 'A'), openAccountWithKeys(admin, 'B')]);
    for (const [name, key] of [
      ['aTest', a.testKey],
      ['aLive', a.liveKey],
      ['bTest', b.testKey],
    ] as const) {
      receivers[name] = await startPartnerReceiver();
      const created = await client(key).post('/v1/webhooks', { url: receivers[name].url, events: EVENTS });
      receivers[name].setSecret(created.body.data.signing_secret);
      endpoints[name] = created.body.data.id;
    }
  });

  afterAll(async () => {
    await service?.stop();
    await Promise.all(Object.values(receivers).map((r) => r.close()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends an account’s sandbox events to its own test endpoints only', async () => {
    const ofA = await launch(a.testKey, 'A only');
    await receivers.aTest.waitFor(webhookOf('dispatch.completed', ofA), 20_000);
    // The marker: B launches only now, after A's events were fanned out and sent. Once B's receiver
    // has B's last event, anything of A's meant for it would have come long before.
    const ofB = await launch(b.testKey, 'B marker');
    await receivers.bTest.waitFor(webhookOf('dispatch.completed', ofB), 20_000);

    const allOfA = (await client(a.testKey).get('/v1/dispatches?limit=100')).body.data.map((d: { id: string }) => d.id);
    expect(allOfA).toContain(ofA);
    expect(dispatchIdsAt(receivers.bTest).filter((id) => allOfA.includes(id))).toEqual([]);
    expect(receivers.aLive.requests()).toEqual([]);
    expect(dispatchIdsAt(receivers.aTest)).not.toContain(ofB);
    // The deliveries stored at fan-out (before any sending) say the same.
    const deliveries = async (key: string, endpoint: string) => (await client(key).get(`/v1/webhooks/${endpoint}/deliveries?limit=100`)).body.data;
    expect(await deliveries(a.liveKey, endpoints.aLive)).toEqual([]);
    const toB = (await deliveries(b.testKey, endpoints.bTest)).map((d: { event_id: string }) => d.event_id);
    const eventsOfB = (await client(b.testKey).get('/v1/events?limit=100')).body.data.map((e: { id: string }) => e.id);
    expect(toB.length).toBeGreaterThan(0);
    expect(toB.filter((id: string) => !eventsOfB.includes(id))).toEqual([]);
  });

  it('lists the events of the type asked for, every type without a filter, and only the caller’s', async () => {
    const completedOne = await launch(a.testKey, 'Listed');
    const failedOne = await launch(a.testKey, 'Listed [sandbox:fail]');
    // The webhooks give the event ids independently of the Events API; the event is kept before it is sent.
    const [completed] = await receivers.aTest.waitFor(webhookOf('dispatch.completed', completedOne), 20_000);
    const [failed] = await receivers.aTest.waitFor(webhookOf('dispatch.failed', failedOne), 20_000);
    const [accepted] = await receivers.aTest.waitFor(webhookOf('dispatch.accepted', failedOne), 20_000);
    const listed = async (key: string, query = '') => (await client(key).get(`/v1/events?limit=100${query}`)).body.data as Array<{ id: string; event: string }>;

    const onlyCompleted = await listed(a.testKey, '&type=dispatch.completed');
    expect(onlyCompleted.length).toBeGreaterThan(0);
    expect(new Set(onlyCompleted.map((e) => e.event))).toEqual(new Set(['dispatch.completed']));
    expect(onlyCompleted.map((e) => e.id)).toContain(completed.body.id);
    const onlyFailed = (await listed(a.testKey, '&type=dispatch.failed')).map((e) => e.id);
    expect(onlyFailed).toContain(failed.body.id);
    expect(onlyFailed).not.toContain(completed.body.id);
    const all = await listed(a.testKey);
    expect(all.map((e) => e.id)).toEqual(expect.arrayContaining([accepted.body.id, completed.body.id, failed.body.id]));
    expect(new Set(all.map((e) => e.event))).toEqual(new Set(EVENTS));

    // One event reads back in the webhook's shape, for its account and mode only.
    expect((await client(a.testKey).get(`/v1/events/${completed.body.id}`)).body.data).toEqual(completed.body);
    for (const key of [b.testKey, a.liveKey]) {
      const answer = await client(key).get(`/v1/events/${completed.body.id}`);
      expect([answer.status, answer.body.error.code]).toEqual([404, 'resource_missing']);
      const theirs = (await listed(key)).map((e) => e.id);
      expect(theirs.filter((id) => all.some((e) => e.id === id))).toEqual([]);
    }
  });
});
