import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { Delivery, PartnerEvent, WebhookEventType } from '@campaign-ops/webhook-domain';
import { deliveriesOf, partnerEventsOf } from './delivery-store';
import { EndpointStore, EndpointView } from './endpoint-store';
import { ReservedLane } from './delivery-loop';
import { FanOut } from './fan-out';

type Mode = 'live' | 'test';

/** An event of one account and mode reaches that account's endpoints of that mode, and no others. */
describe('FanOut', () => {
  let dir: string;
  let reads: SqliteReadStore;
  let events: SqliteEventStore;
  let endpoints: EndpointStore;
  let fanOut: FanOut;
  let stored: number;
  /** What the loop answers when a lane is asked for: none by default (every delivery stored due, for the round). */
  let lanes: (endpointId: string) => ReservedLane | null;

  const endpoint = (id: string, account: string, mode: Mode, more: Partial<EndpointView> = {}) =>
    endpoints.views.upsert(
      {
        id,
        account_id: account,
        mode,
        url: `https://${id}.example/hooks`,
        events: ['dispatch.accepted', 'dispatch.completed'],
        enabled: true,
        disabled_reason: null,
        deleted: false,
        sealed_secret: 'sealed',
        created_at: '2026-11-01T00:00:00.000Z',
        updated_at: '2026-11-01T00:00:00.000Z',
        ...more,
      },
      0,
    );
  const event = (id: string, accountId: string, mode: Mode, type: WebhookEventType = 'dispatch.completed'): PartnerEvent => ({
    id,
    event: type,
    timestamp: new Date().toISOString(),
    data: { dispatch_id: `dsp_of_${id}` },
    accountId,
    mode,
  });
  const deliveredTo = async (eventId: string) =>
    (await deliveriesOf(reads).find({ event_id: eventId }, { limit: 1000 })).items.map((d) => d.endpoint_id).sort();

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fan-out-'));
    reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    events = SqliteEventStore.open(':memory:');
    endpoints = new EndpointStore(events, reads);
    stored = 0;
    lanes = () => null;
    fanOut = new FanOut(endpoints, deliveriesOf(reads), partnerEventsOf(reads), { kick: () => void stored++, reserve: (id) => lanes(id), queue: () => null });
    // Two accounts, each with an endpoint in each mode.
    await endpoint('whk_a_test', 'acct_a', 'test');
    await endpoint('whk_a_live', 'acct_a', 'live');
    await endpoint('whk_b_test', 'acct_b', 'test');
    await endpoint('whk_b_live', 'acct_b', 'live');
  });

  afterEach(async () => {
    await reads.close();
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['acct_a', 'test', 'whk_a_test'],
    ['acct_a', 'live', 'whk_a_live'],
    ['acct_b', 'test', 'whk_b_test'],
    ['acct_b', 'live', 'whk_b_live'],
  ] as const)('sends an event of %s in %s mode only to %s', async (account, mode, only) => {
    await fanOut.handle(event('evt_1', account, mode));
    expect(await deliveredTo('evt_1')).toEqual([only]);
    const [delivery] = (await deliveriesOf(reads).find({ event_id: 'evt_1' }, { limit: 1 })).items;
    expect(delivery).toMatchObject({ account_id: account, mode, event: 'dispatch.completed', status: 'pending' });
    expect(stored).toBe(1);
  });

  it('skips endpoints not subscribed to the event, disabled or deleted', async () => {
    await endpoint('whk_a_failed_only', 'acct_a', 'test', { events: ['dispatch.failed'] });
    await endpoint('whk_a_disabled', 'acct_a', 'test', { enabled: false, disabled_reason: 'failing' });
    await endpoint('whk_a_deleted', 'acct_a', 'test', { deleted: true });
    await fanOut.handle(event('evt_2', 'acct_a', 'test'));
    expect(await deliveredTo('evt_2')).toEqual(['whk_a_test']);
  });

  it('adds nothing when the same event comes again, and keeps it for the Events API once', async () => {
    const redelivered = event('evt_3', 'acct_b', 'test');
    await fanOut.handle(redelivered);
    await fanOut.handle(redelivered);
    expect(await deliveredTo('evt_3')).toEqual(['whk_b_test']);
    expect(stored).toBe(1);
    expect(await partnerEventsOf(reads).get('evt_3')).toMatchObject({ account_id: 'acct_b', mode: 'test', type: 'dispatch.completed' });
  });

  it('reaches every endpoint of the account however many there are (pages of 100)', async () => {
    const many = Array.from({ length: 130 }, (_, i) => `whk_a_many_${String(i).padStart(3, '0')}`);
    for (const id of many) await endpoint(id, 'acct_a', 'live');
    await fanOut.handle(event('evt_4', 'acct_a', 'live'));
    expect(await deliveredTo('evt_4')).toEqual([...many, 'whk_a_live'].sort());
  });

  describe('with a lane free for the endpoint', () => {
    const LEASE_UNTIL = '2099-01-01T00:00:00.000Z';
    let sent: Delivery[];
    let released: number;

    beforeEach(() => {
      sent = [];
      released = 0;
      lanes = () => ({ leaseUntil: LEASE_UNTIL, send: (delivery) => void sent.push(delivery), release: () => void released++ });
    });

    it('stores the delivery leased, as a claim leaves it, and sends it from its hand: no claim, no round', async () => {
      await fanOut.handle(event('evt_5', 'acct_a', 'test'));
      const [delivery] = (await deliveriesOf(reads).find({ event_id: 'evt_5' }, { limit: 1 })).items;
      expect(delivery).toMatchObject({ endpoint_id: 'whk_a_test', status: 'pending', attempts: 0, lease_until: LEASE_UNTIL, next_attempt_at: LEASE_UNTIL });
      expect(sent).toEqual([delivery]);
      expect([stored, released]).toEqual([0, 0]);
    });

    it('gives the lane back when the delivery was stored before (the event came again)', async () => {
      const again = event('evt_6', 'acct_b', 'live');
      await fanOut.handle(again);
      await fanOut.handle(again);
      expect(sent.map((delivery) => delivery.event_id)).toEqual(['evt_6']);
      expect([stored, released]).toEqual([0, 1]);
    });

    it('gives the lane back when the delivery cannot be stored, and fails', async () => {
      jest.spyOn(deliveriesOf(reads), 'insert').mockRejectedValueOnce(new Error('disk full'));
      await expect(fanOut.handle(event('evt_7', 'acct_a', 'live'))).rejects.toThrow('disk full');
      expect([sent.length, released]).toEqual([0, 1]);
      jest.restoreAllMocks();
    });
  });
});
