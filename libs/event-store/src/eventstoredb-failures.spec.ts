import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { EventStoreLogger } from './event-store-logger';
import { RecordedEvent, Subscription } from './event-store.port';
import { encodePosition } from './esdb-position';
import { EventStoreDbEventStore, EventStoreDbOptions, SubscriptionPositionRefusedError } from './eventstoredb-event-store';
import { FakeEventStoreDb, unavailable } from './testing/fake-eventstoredb';

/**
 * The EventStoreDB adapter with the real client (@eventstore/db-client) against a fake node
 * (testing/fake-eventstoredb.ts) that hangs, fails and refuses as a real one under failure does.
 * Everything on 127.0.0.1; every wait bounded.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** The promise's outcome, or a failure naming what did not settle within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const newEvent = (type = 'Tested', data: Record<string, unknown> = {}) => ({ id: ulidToUuid(ulid()), type, data });

describe('EventStoreDbEventStore against a fake EventStoreDB node', () => {
  const nodes: FakeEventStoreDb[] = [];
  const stores: EventStoreDbEventStore[] = [];
  let warnings: string[];
  const logger: EventStoreLogger = { warn: (message) => warnings.push(message), error: (message) => warnings.push(message) };

  beforeEach(() => {
    warnings = [];
  });

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => within(store.close(), 5000, 'closing the store')));
    await Promise.all(nodes.splice(0).map((node) => node.stop()));
  });

  async function node(options: { batchAppend?: boolean } = {}): Promise<FakeEventStoreDb> {
    const started = await FakeEventStoreDb.start(options);
    nodes.push(started);
    return started;
  }

  function connect(to: FakeEventStoreDb, options: EventStoreDbOptions = {}): EventStoreDbEventStore {
    const store = EventStoreDbEventStore.connect(to.connectionString, { logger, ...options });
    stores.push(store);
    return store;
  }

  function record(store: EventStoreDbEventStore, options: { fromPosition?: string; streamPrefixes?: string[] } = {}) {
    const events: RecordedEvent[] = [];
    const errors: Error[] = [];
    const subscription: Subscription = store.subscribeToAll({
      ...options,
      onEvent: async (event) => void events.push(event),
      onError: (error) => errors.push(error),
    });
    return { events, errors, subscription };
  }

  it('serves the adapter as a node would: append, read back, subscribe', async () => {
    const fake = await node();
    const store = connect(fake);
    const appended = await store.append('order-1', [newEvent('Placed', { total: 3 })], { expectedRevision: 'no_stream' });
    expect(appended).toEqual({ nextRevision: 0, position: encodePosition({ commit: 100n, prepare: 100n }) });
    await expect(store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/expected revision/);
    expect(await store.readStream('order-1')).toEqual([expect.objectContaining({ type: 'Placed', data: { total: 3 }, revision: 0 })]);
    await expect(store.ping()).resolves.toBeUndefined();

    const { events } = record(store, { streamPrefixes: ['order-'] });
    fake.write('invoice-1', [{ type: 'Issued' }]);
    fake.write('order-1', [{ type: 'Paid' }]);
    await waitFor(() => events.length === 2, 'both order events');
    expect(events.map((event) => event.type)).toEqual(['Placed', 'Paid']);
  });

  it('appends over BatchAppend when the node offers it, as production servers do', async () => {
    const fake = await node({ batchAppend: true });
    const store = connect(fake);

    const appended = await store.append('order-1', [newEvent('Placed', { total: 3 })], { expectedRevision: 'no_stream' });
    expect(appended).toEqual({ nextRevision: 0, position: encodePosition({ commit: 100n, prepare: 100n }) });
    await expect(store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/expected revision/);
    await store.append('order-1', [newEvent('Paid'), newEvent('Shipped')], { expectedRevision: 0 });

    expect(fake.callsOf('batch-append')).toHaveLength(1);
    expect(fake.callsOf('append')).toHaveLength(3);
    expect((await store.readStream('order-1')).map((event) => event.type)).toEqual(['Placed', 'Paid', 'Shipped']);
  });

  describe('a node that stays connected but stops answering', () => {
    it.each([
      ['BatchAppend (production servers)', true],
      ['the plain Append', false],
    ])('fails an append over %s that gets no answer', async (_, batchAppend) => {
      const fake = await node({ batchAppend });
      const store = connect(fake, { appendTimeoutMs: 200 });
      fake.behaviour.append = 'hang';

      const started = Date.now();
      await expect(within(store.append('order-1', [newEvent()], { expectedRevision: 'any' }), 3000, 'the append')).rejects.toThrow(
        /did not answer within 200 ms \(append to stream order-1\)/,
      );
      expect(Date.now() - started).toBeLessThan(1500);
      // The node answers again: appends go through (over the same BatchAppend call).
      fake.behaviour.append = 'serve';
      await expect(within(store.append('order-2', [newEvent()], { expectedRevision: 'no_stream' }), 3000, 'the next append')).resolves.toEqual(
        expect.objectContaining({ nextRevision: 0 }),
      );
    });

    it('fails a read of $all and a read of its head that get no answer, and cancels them', async () => {
      const fake = await node();
      fake.write('order-1', [{ type: 'Placed' }]);
      const store = connect(fake, { readTimeoutMs: 200 });
      fake.behaviour.read = 'hang';

      await expect(within(store.readAll({ maxCount: 10 }), 3000, 'the page')).rejects.toThrow(/did not answer within 200 ms \(read of \$all\)/);
      await expect(within(store.lastPosition(), 3000, 'the head')).rejects.toThrow(/did not answer within 200 ms \(read of the head of \$all\)/);
      await waitFor(() => fake.callsOf('read-all').length === 2 && fake.callsOf('read-all').every((call) => call.cancelled), 'both reads to be cancelled');
    });

    it('fails ping within its timeout, and cancels the read it left', async () => {
      const fake = await node();
      const store = connect(fake, { pingTimeoutMs: 200 });
      fake.behaviour.read = 'hang';

      const started = Date.now();
      await expect(within(store.ping(), 3000, 'ping')).rejects.toThrow(/did not answer within 200 ms/);
      expect(Date.now() - started).toBeLessThan(1500);
      await waitFor(() => fake.callsOf('read-stream')[0]?.cancelled === true, 'the ping read to be cancelled');
    });

    it('fails a stream read that gets no answer, and cancels it', async () => {
      const fake = await node();
      const store = connect(fake, { readTimeoutMs: 200 });
      fake.behaviour.read = 'hang';

      await expect(within(store.readStream('order-1'), 3000, 'the read')).rejects.toThrow(/did not answer within 200 ms \(read of stream order-1\)/);
      await waitFor(() => fake.callsOf('read-stream')[0]?.cancelled === true, 'the read to be cancelled');
    });

    it('asks the node once for concurrent pings: readiness probes do not pile up reads', async () => {
      const fake = await node();
      const store = connect(fake, { pingTimeoutMs: 300 });
      fake.behaviour.read = 'hang';

      const pings = Array.from({ length: 5 }, () => within(store.ping(), 3000, 'ping').catch((error: Error) => error));
      const outcomes = await Promise.all(pings);

      expect(outcomes.map((outcome) => (outcome instanceof Error ? outcome.message : 'ok'))).toEqual(
        Array(5).fill(expect.stringMatching(/did not answer within 300 ms/)),
      );
      expect(fake.callsOf('read-stream')).toHaveLength(1);
      // Once that one is over, the next ping asks again.
      fake.behaviour.read = 'serve';
      await expect(within(store.ping(), 3000, 'ping')).resolves.toBeUndefined();
      expect(fake.callsOf('read-stream')).toHaveLength(2);
    });

    it('tears a stalled subscription down and resubscribes when the stall check gets no answer', async () => {
      const fake = await node();
      fake.write('order-1', [{ type: 'Placed' }]);
      const store = connect(fake, { stallTimeoutMs: 200, stallProbeTimeoutMs: 200 });
      fake.behaviour.subscribe = 'confirm-then-hang';
      fake.behaviour.read = 'hang';

      const { events, errors } = record(store, { streamPrefixes: ['order-'] });
      await waitFor(() => fake.callsOf('subscribe').length >= 2, 'a resubscription', 8000);

      expect(fake.callsOf('subscribe')[0]!.cancelled).toBe(true);
      // The stall checks timed out and were cancelled, one after the other: none is left pending.
      await waitFor(() => fake.callsOf('read-all').every((call) => call.cancelled), 'the stall checks to be cancelled');
      expect(warnings).toContainEqual(expect.stringMatching(/stall check got no answer.*did not answer within 200 ms/));

      // The node answers again: the next subscription delivers.
      fake.behaviour.subscribe = 'serve';
      fake.behaviour.read = 'serve';
      await waitFor(() => events.length === 1, 'the event', 8000);
      expect(errors).toEqual([]);
    });
  });

  describe('a node that is no longer the leader', () => {
    /** A leader with the whole history, and a follower that has only part of it and knows the leader. */
    async function cluster() {
      const leader = await node();
      const follower = await node();
      follower.behaviour.followerOf = { host: '127.0.0.1', port: leader.port };
      follower.behaviour.forwardAppendsTo = leader;
      leader.write('order-1', [{ type: 'Placed' }, { type: 'Paid' }]);
      follower.write('order-1', [{ type: 'Placed' }]);
      return { leader, follower };
    }

    it('reads streams on the leader, not from a stale follower', async () => {
      const { leader, follower } = await cluster();
      const store = connect(follower);

      const events = await within(store.readStream('order-1'), 5000, 'the read');

      expect(events.map((event) => event.type)).toEqual(['Placed', 'Paid']);
      expect(follower.callsOf('read-stream')).toEqual([expect.objectContaining({ requiresLeader: true })]);
      expect(leader.callsOf('read-stream')).toHaveLength(1);
    });

    it('appends on the leader and reads the event back there', async () => {
      const { leader, follower } = await cluster();
      const store = connect(follower);

      const result = await within(store.append('order-2', [newEvent('Placed')], { expectedRevision: 'no_stream' }), 5000, 'the append');

      // Read back on a follower, the event may not be there yet: the adapter would warn and guess.
      expect(warnings).toEqual([]);
      const stored = leader.log.find((event) => event.streamId === 'order-2')!;
      expect(result).toEqual({ nextRevision: 0, position: encodePosition({ commit: stored.position, prepare: stored.position }) });
      expect(leader.callsOf('read-stream')).toHaveLength(1);
    });

    it('reads $all and its head on the leader: a stale follower would end an export early, or report an older head', async () => {
      const { leader, follower } = await cluster();
      const store = connect(follower);

      const page = await within(store.readAll({ maxCount: 10 }), 5000, 'the page');
      const head = await within(store.lastPosition(), 5000, 'the head');

      expect(page.map((event) => event.type)).toEqual(['Placed', 'Paid']);
      const last = leader.log.at(-1)!;
      expect(head).toBe(encodePosition({ commit: last.position, prepare: last.position }));
      // The follower refused the first (it requires the leader); the client has used the leader since.
      expect(follower.callsOf('read-all')).toEqual([expect.objectContaining({ requiresLeader: true })]);
      expect(leader.callsOf('read-all')).toHaveLength(2);
    });

    it('appends over BatchAppend on the leader when the node it talks to is a follower', async () => {
      const leader = await node({ batchAppend: true });
      const follower = await node({ batchAppend: true });
      follower.behaviour.followerOf = { host: '127.0.0.1', port: leader.port };
      const store = connect(follower);

      const result = await within(store.append('order-2', [newEvent('Placed')], { expectedRevision: 'no_stream' }), 5000, 'the append');

      expect(result.nextRevision).toBe(0);
      expect(leader.log.map((event) => event.streamId)).toEqual(['order-2']);
      expect(follower.log).toEqual([]);
      expect(follower.callsOf('batch-append')).toEqual([expect.objectContaining({ requiresLeader: true })]);
    });

    it('subscribes on the leader', async () => {
      const { follower } = await cluster();
      const store = connect(follower);

      const { events, errors } = record(store, { streamPrefixes: ['order-'] });

      await waitFor(() => events.length === 2, 'the leader’s two events');
      expect(events.map((event) => event.type)).toEqual(['Placed', 'Paid']);
      expect(errors).toEqual([]);
    });

    it('pings the leader: readiness means this node can serve writes and current reads', async () => {
      const { leader, follower } = await cluster();
      const store = connect(follower);

      await within(store.ping(), 5000, 'ping');

      expect(leader.callsOf('read-stream')).toHaveLength(1);
    });

    it('fails an append clearly when the nodes keep answering NotLeader', async () => {
      const a = await node();
      const b = await node();
      a.behaviour.followerOf = { host: '127.0.0.1', port: b.port };
      b.behaviour.followerOf = { host: '127.0.0.1', port: a.port };
      const store = connect(a);

      await expect(within(store.append('order-1', [newEvent()], { expectedRevision: 'any' }), 5000, 'the append')).rejects.toThrow(
        /not the leader.*127\.0\.0\.1:\d+/,
      );
      expect(a.log).toEqual([]);
      expect(b.log).toEqual([]);
    });
  });

  describe('a subscription confirmed and then dropped', () => {
    it('backs off exponentially while it delivers nothing', async () => {
      const fake = await node();
      const store = connect(fake, { resubscribeBackoff: { initialMs: 20, maxMs: 10_000 } });
      fake.behaviour.subscribe = { confirmThen: unavailable('Server Is Not Ready') };

      const { errors } = record(store);
      await sleep(1500);

      // Without backoff (a confirmed subscription counted as having worked) this is ~50 attempts.
      expect(fake.callsOf('subscribe').length).toBeLessThanOrEqual(9);
      const attempts = warnings.flatMap((message) => /\(attempt (\d+)\)/.exec(message)?.[1] ?? []).map(Number);
      expect(attempts.slice(0, 4)).toEqual([1, 2, 3, 4]);
      expect(errors).toEqual([]);
    });

    it('starts the backoff over once a subscription has delivered events', async () => {
      const fake = await node();
      const store = connect(fake, { resubscribeBackoff: { initialMs: 20, maxMs: 10_000 } });
      fake.behaviour.subscribe = { confirmThen: unavailable() };
      const { events } = record(store);
      await waitFor(() => fake.callsOf('subscribe').length >= 4, 'a few failed attempts');

      fake.behaviour.subscribe = 'serve';
      fake.write('order-1', [{ type: 'Placed' }]);
      await waitFor(() => events.length === 1, 'the event', 8000);
      const before = warnings.length;
      fake.dropSubscriptions(unavailable());

      await waitFor(() => warnings.length > before, 'the resubscription warning');
      expect(warnings[before]).toMatch(/Server Is Not Ready; resubscribing .* \(attempt 1\)/);
    });

    it('stops with a clear onError when the node refuses the start position as invalid', async () => {
      const fake = await node();
      fake.write('order-1', [{ type: 'Placed' }]);
      const store = connect(fake, { resubscribeBackoff: { initialMs: 20, maxMs: 100 } });
      // A checkpoint from before the database was recreated: no event is at that position.
      const checkpoint = encodePosition({ commit: 987_654n, prepare: 987_654n });

      const { errors } = record(store, { fromPosition: checkpoint, streamPrefixes: ['order-'] });
      await waitFor(() => errors.length === 1, 'onError', 5000);
      await sleep(300);

      expect(errors[0]).toBeInstanceOf(SubscriptionPositionRefusedError);
      expect(errors[0]!.message).toMatch(new RegExp(`refuses to subscribe from position ${checkpoint}`));
      expect(errors[0]!.message).toMatch(/not a valid .*Position/);
      expect(errors[0]!.message).toMatch(/checkpoint/);
      expect(fake.callsOf('subscribe')).toHaveLength(1);
      expect(errors).toHaveLength(1);
    });
  });
});
