import { InProcessBus } from '@campaign-ops/adapters/bus';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { CampaignSpec, SandboxSimulator } from '@campaign-ops/channels';
import { Dispatch, dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { waitFor } from '@campaign-ops/testing/bus';
import { PartnerEventSink } from '@campaign-ops/webhook-domain';
import { DispatchExecutor, WorkMessage } from './dispatch-executor';
import { relayDispatchEvent, RelayedStates } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';
import { DispatchWork } from './dispatch-work';
import { LiveLaunches } from './live-launches';

const campaign = (name: string): CampaignSpec => ({
  name,
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'EUR', type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
});
const noPartnerEvents: PartnerEventSink = { accept: async () => undefined };

describe("the relay's work: in the relay's hand when it is done at once, else on the bus", () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let store: DispatchStore;
  let executor: DispatchExecutor;
  /** What reached the executor's consumer on the bus, the marker included. */
  let onBus: Array<{ subject: string; data: WorkMessage }>;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open({ pollIntervalMs: 20 });
    store = new DispatchStore(events, reads);
    executor = new DispatchExecutor(store, new SandboxSimulator({ slowMs: 0 }), new LiveLaunches({}, bus), { channelRetryMaxWaitMs: 60_000 });
    onBus = [];
    works = [];
    await bus.consume<WorkMessage>({ durable: 'dispatch-executor', subject: 'evt.>' }, async ({ subject, data }) => void onBus.push({ subject, data }));
  });

  afterEach(async () => {
    // What each replica settled is saved before the stores close (a stop does the same).
    await Promise.all(works.map((w) => w.tally.save()));
    await bus.close();
    await events.close();
    await reads.close();
  });

  /** A replica's DispatchWork: every one shares the bus and the stores. */
  let works: DispatchWork[] = [];
  const work = () => {
    const made = new DispatchWork(bus, executor, store, reads);
    works.push(made);
    return made;
  };

  /** A dispatch accepted (its view written, as the launch writes it), relayed to `sink`. */
  async function launch(sink: DispatchWork, options: { name?: string; mode?: 'test' | 'live' } = {}) {
    const id = `dsp_${Math.random().toString(36).slice(2)}`;
    const streamId = dispatchStreamId(id);
    const mode = options.mode ?? 'test';
    const decided = await store.repository.execute(
      streamId,
      {
        type: 'CreateDispatch',
        dispatchId: id,
        accountId: 'acct_1',
        mode,
        channel: 'meta_ads',
        campaign: campaign(options.name ?? 'Spring'),
        connectionId: mode === 'live' ? 'con_1' : null,
        idempotencyKey: null,
        now: new Date().toISOString(),
      },
      { accountId: 'acct_1', mode },
    );
    await store.showDecided(decided);
    const [accepted] = await events.readStream(streamId);
    const reading = jest.spyOn(store, 'stateOf');
    await relayDispatchEvent(store, sink, noPartnerEvents, accepted, new RelayedStates());
    const readsByRelayAndExecutor = reading.mock.calls.length;
    reading.mockRestore();
    return { id, streamId, accepted, readsByRelayAndExecutor };
  }

  /** Everything the bus got so far, once a marker published after it has arrived. */
  async function busSoFar() {
    const marker = `marker-${onBus.length}-${Math.random()}`;
    await bus.publish('evt.marker', { marker }, { msgId: marker });
    await waitFor(() => onBus.some(({ data }) => (data as unknown as { marker?: string }).marker === marker), 'the marker');
    return onBus.filter(({ subject }) => subject !== 'evt.marker');
  }

  const stateOf = async (streamId: string) => (await store.stateOf(streamId)).state as Dispatch;

  it('runs a test-key launch in hand, on the state the relay carries: completed, nothing on the bus, the stream not read again', async () => {
    const sink = work();
    const { streamId, readsByRelayAndExecutor } = await launch(sink);
    expect(await stateOf(streamId)).toMatchObject({ status: 'completed', providerResourceId: expect.stringMatching(/^sbx_meta_ads_/) });
    expect(readsByRelayAndExecutor).toBe(0);
    expect(await busSoFar()).toEqual([]);
  });

  it('hands to the bus what waits: a live launch and a [sandbox:slow] one', async () => {
    const live = await launch(work(), { mode: 'live' });
    const slow = await launch(work(), { name: 'Spring [sandbox:slow]' });
    const handed = await busSoFar();
    expect(handed.map(({ subject, data }) => [subject, data.id])).toEqual([
      ['evt.dispatch.DispatchAccepted', live.accepted.id],
      ['evt.dispatch.DispatchAccepted', slow.accepted.id],
    ]);
    expect(handed.every(({ data }) => data.notBefore === undefined)).toBe(true);
    for (const { streamId } of [live, slow]) expect((await stateOf(streamId)).status).toBe('accepted');
  });

  it('runs the first try of a transient failure in hand, then hands the event to the bus to wait for its next try', async () => {
    const before = Date.now();
    const { streamId, accepted } = await launch(work(), { name: 'Spring [sandbox:transient]' });
    expect(await stateOf(streamId)).toMatchObject({ status: 'accepted', attempts: 1 });
    const [waiting] = await busSoFar();
    expect(waiting.subject).toBe('evt.dispatch.DispatchAccepted');
    expect(waiting.data.id).toBe(accepted.id);
    // The executor's first backoff (500 ms) from the try.
    expect(waiting.data.notBefore).toBeGreaterThanOrEqual(before + 500);
    expect(waiting.data.notBefore).toBeLessThanOrEqual(Date.now() + 500);

    // Handed over early, the executor asks for the rest of the wait and does nothing; then it runs the next try.
    const early = await executor.handle(waiting.data);
    expect(early).toEqual({ retryInMs: expect.any(Number) });
    expect((early as { retryInMs: number }).retryInMs).toBeLessThanOrEqual(500);
    expect(await stateOf(streamId)).toMatchObject({ status: 'accepted', attempts: 1 });
    await executor.handle({ ...waiting.data, notBefore: Date.now() - 1 });
    expect(await stateOf(streamId)).toMatchObject({ status: 'completed', attempts: 2 });
  });

  it('hands to the bus what fails in hand, so that the relay goes on and the consumer retries it', async () => {
    const handle = jest.spyOn(executor, 'handle').mockRejectedValueOnce(new Error('the event store is busy'));
    const { streamId, accepted } = await launch(work());
    expect(handle).toHaveBeenCalledTimes(1);
    const handed = await busSoFar();
    expect(handed.map(({ data }) => data.id)).toEqual([accepted.id]);
    expect((await stateOf(streamId)).status).toBe('accepted');
  });

  it("reads the overload rule's backlog: the dispatches still accepted, and what settled in hand and on the bus", async () => {
    const inHand = work();
    await launch(inHand);
    await launch(inHand, { mode: 'live' });
    await launch(inHand, { name: 'Spring [sandbox:transient]' });
    await busSoFar();
    // The live one and the transient one are still accepted; two settled in hand (the completed
    // one and the transient's first try), beside what the consumer settled on the bus.
    const onBusSettled = (await bus.progress('dispatch-executor')).settled;
    expect(onBusSettled).toBeGreaterThan(0);
    expect(await inHand.progress()).toEqual({ pending: 2, settled: 2 + onBusSettled });
  });

  it('reads the same backlog in a replica that does not hold the relay: the count the one that holds it saved', async () => {
    const relaying = work();
    const standingBy = work();
    for (let i = 0; i < 3; i++) await launch(relaying);
    await launch(relaying, { mode: 'live' });
    await busSoFar();
    await relaying.tally.save();
    const onBusSettled = (await bus.progress('dispatch-executor')).settled;
    expect(await standingBy.progress()).toEqual({ pending: 1, settled: 3 + onBusSettled });
    expect(await standingBy.progress()).toEqual(await relaying.progress());
  });
});
