import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { pendingDelivery } from '@campaign-ops/webhook-domain';
import { deliveriesOf, partnerEventsOf } from './delivery-store';
import { DeliveryQueries } from './delivery-queries';
import { EndpointStore } from './endpoint-store';
import { EVENT_RETENTION_MS, EventQueries } from './event-queries';

describe('retention', () => {
  const day = 24 * 60 * 60 * 1000;
  const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

  it('forgets finished deliveries and partner events past 30 days, and nothing else', async () => {
    const reads = SqliteReadStore.open(':memory:');
    const events = SqliteEventStore.open(':memory:');
    const deliveries = deliveriesOf(reads);
    const delivery = (id: string, status: 'pending' | 'succeeded' | 'failed', created: string) =>
      deliveries.insert({
        ...pendingDelivery(
          { id, endpoint_id: 'whk_1', account_id: 'acct_1', mode: 'test', event_id: 'evt_1', event: 'dispatch.completed', body: '{}' },
          created,
        ),
        status,
      });
    await delivery('dlv_old_ok', 'succeeded', ago(31 * day));
    await delivery('dlv_old_failed', 'failed', ago(40 * day));
    await delivery('dlv_old_pending', 'pending', ago(31 * day));
    await delivery('dlv_recent', 'succeeded', ago(1 * day));
    const queries = new DeliveryQueries(new EndpointStore(events, reads), deliveries, { kick: () => undefined });
    expect(await queries.purgeFinished(EVENT_RETENTION_MS)).toBe(2);
    expect((await deliveries.find({}, { limit: 10 })).items.map((d) => d.id).sort()).toEqual(['dlv_old_pending', 'dlv_recent']);

    const partnerEvents = partnerEventsOf(reads);
    await partnerEvents.insert({ id: 'evt_old', account_id: 'acct_1', mode: 'test', type: 'dispatch.completed', created_at: ago(31 * day), data: {} });
    await partnerEvents.insert({ id: 'evt_new', account_id: 'acct_1', mode: 'test', type: 'dispatch.completed', created_at: ago(day), data: {} });
    expect(await new EventQueries(partnerEvents).purgeExpired()).toBe(1);
    expect(await partnerEvents.get('evt_new')).not.toBeNull();
    await reads.close();
    await events.close();
  });
});
