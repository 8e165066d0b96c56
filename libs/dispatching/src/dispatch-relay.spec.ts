import { InProcessBus } from '@campaign-ops/adapters/bus';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { waitFor } from '@campaign-ops/testing/bus';
import { PartnerEvent, partnerEventsOnBus } from '@campaign-ops/webhook-domain';
import { relayDispatchEvent, RelayedStates, workOnBus } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';

describe('the dispatch relay', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let store: DispatchStore;
  let relayed: Array<{ subject: string; data: Record<string, unknown> }>;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    store = new DispatchStore(events, reads);
    relayed = [];
    await bus.consume<Record<string, unknown>>({ durable: 'everything', subject: 'evt.>' }, async ({ subject, data }) => void relayed.push({ subject, data }));
  });

  afterEach(async () => {
    await bus.close();
    await events.close();
    await reads.close();
  });

  /** A dispatch accepted, then completed: its two stored events. */
  const acceptedThenCompleted = async (dispatchId: string) => {
    const streamId = dispatchStreamId(dispatchId);
    const now = '2026-11-29T10:00:00.000Z';
    const metadata = { accountId: 'acct_1', mode: 'test' };
    await store.repository.execute(
      streamId,
      {
        type: 'CreateDispatch',
        dispatchId,
        accountId: 'acct_1',
        mode: 'test',
        channel: 'meta_ads',
        campaign: {
          name: 'Spring',
          objective: 'conversion',
          budget: { amount_micros: 50_000_000, currency: 'EUR', type: 'daily' },
          schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
        },
        connectionId: null,
        idempotencyKey: null,
        now,
      },
      metadata,
    );
    await store.repository.execute(streamId, { type: 'RecordProviderSuccess', attempt: 1, providerResourceId: 'sim_1', now }, metadata);
    const stored = await events.readStream(streamId);
    expect(stored.map((event) => event.type)).toEqual(['DispatchAccepted', 'DispatchCompleted']);
    return { streamId, stored };
  };

  it('relays what sets work going as itself, and every transition partners see as its partner event', async () => {
    const { streamId, stored } = await acceptedThenCompleted('dsp_relay1');
    const onBus = partnerEventsOnBus(bus);

    // The state each event leaves is carried to the next, and a stream's first event is its state: nothing is read.
    const reads = jest.spyOn(store, 'stateOf');
    const states = new RelayedStates();
    for (const event of stored) await relayDispatchEvent(store, workOnBus(bus), onBus, event, states);
    expect(reads).not.toHaveBeenCalled();
    // Twice, as after a crash between a relay and its checkpoint (nothing carried: the second event's stream is read): de-duplicated by id.
    for (const event of stored) await relayDispatchEvent(store, workOnBus(bus), onBus, event);
    expect(reads.mock.calls).toEqual([[streamId, 1]]);

    await waitFor(() => relayed.length >= 3, 'the relayed messages');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(relayed.map(({ subject }) => subject).sort()).toEqual([
      'evt.dispatch.DispatchAccepted',
      'evt.partner.dispatch_accepted',
      'evt.partner.dispatch_completed',
    ]);
    const completed = relayed.find(({ subject }) => subject === 'evt.partner.dispatch_completed')!.data;
    expect(completed).toMatchObject({ event: 'dispatch.completed', accountId: 'acct_1', mode: 'test', timestamp: stored[1].occurredAt });
    expect(completed.data).toMatchObject({ dispatch_id: 'dsp_relay1', status: 'completed', provider_resource_id: 'sim_1' });
  });

  it('hands partner events to a sink in the same process (the fan-out), so that only work crosses the bus', async () => {
    const { stored } = await acceptedThenCompleted('dsp_relay2');
    const handed: Array<{ event: PartnerEvent; msgId: string }> = [];
    const fanOut = { accept: async (event: PartnerEvent, msgId: string) => void handed.push({ event, msgId }) };
    for (const event of stored) await relayDispatchEvent(store, workOnBus(bus), fanOut, event);

    expect(handed.map(({ event, msgId }) => [event.event, msgId])).toEqual([
      ['dispatch.accepted', `partner-${stored[0].id}`],
      ['dispatch.completed', `partner-${stored[1].id}`],
    ]);
    expect(handed[1].event).toMatchObject({ accountId: 'acct_1', mode: 'test', timestamp: stored[1].occurredAt, data: { dispatch_id: 'dsp_relay2' } });
    await waitFor(() => relayed.length >= 1, 'the work relayed');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(relayed.map(({ subject }) => subject)).toEqual(['evt.dispatch.DispatchAccepted']);
  });
});
