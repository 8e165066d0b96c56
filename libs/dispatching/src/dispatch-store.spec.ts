import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { DispatchStore } from './dispatch-store';

describe('the dispatch store', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let store: DispatchStore;

  beforeEach(() => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    store = new DispatchStore(events, reads);
  });

  afterEach(async () => {
    await events.close();
    await reads.close();
  });

  it("shows a command's outcome from the state it decided, as reading the stream would, and never over a later one", async () => {
    const streamId = dispatchStreamId('dsp_store1');
    const metadata = { accountId: 'acct_1', mode: 'test' };
    const now = '2026-11-29T10:00:00.000Z';
    const created = await store.repository.execute(
      streamId,
      {
        type: 'CreateDispatch',
        dispatchId: 'dsp_store1',
        accountId: 'acct_1',
        mode: 'test',
        channel: 'tiktok_ads',
        campaign: {
          name: 'Spring',
          objective: 'traffic',
          budget: { amount_micros: 5_000_000, currency: 'USD', type: 'daily' },
          schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'UTC' },
        },
        connectionId: null,
        idempotencyKey: null,
        now,
      },
      metadata,
    );
    const completed = await store.repository.execute(streamId, { type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'sim_1', now }, metadata);

    await store.showDecided(completed);
    const shown = await store.views.get('dsp_store1');
    expect(shown).toMatchObject({ id: 'dsp_store1', status: 'completed', account_id: 'acct_1', mode: 'test' });
    await expect(store.views.revisionOf('dsp_store1')).resolves.toBe(1);

    // The earlier outcome, shown late (a slow command): the later view stays.
    await store.showDecided(created);
    await expect(store.views.get('dsp_store1')).resolves.toEqual(shown);

    // What the projection writes from the stream is the same document.
    await reads.close();
    reads = SqliteReadStore.open(':memory:');
    const fresh = new DispatchStore(events, reads);
    await fresh.refreshView(streamId);
    await expect(fresh.views.get('dsp_store1')).resolves.toEqual(shown);
  });
});
