import { Decider, DomainEvent, eventVersions } from '@campaign-ops/decider';
import { RecordedEvent, WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { EventStoreDbEventStore, SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { FakeEventStoreDb } from '@campaign-ops/testing/event-store';
import { AggregateRepository, toDomainEvent, toStoredEvent } from './aggregate-repository';

type Renamed = DomainEvent<'Renamed', { name: string }>;
const RENAMED = eventVersions<Renamed>('sample', { Renamed: [({ title }) => ({ name: title })] });
const recorded = (data: Record<string, unknown>, metadata: Record<string, unknown>): RecordedEvent => ({
  id: '01a210f0-0000-0000-0000-000000000001',
  streamId: 'sample-1',
  type: 'Renamed',
  revision: 0,
  position: '1',
  data,
  metadata,
  occurredAt: '2026-11-25T04:20:00.000Z',
});

describe('events between the store and the domain', () => {
  it('writes the version beside the metadata and reads it back unchanged', () => {
    const stored = toStoredEvent(RENAMED.event('Renamed', { name: 'n' }), { accountId: 'acct_1' });
    expect(stored.metadata).toEqual({ accountId: 'acct_1', version: 2 });
    expect(toDomainEvent(recorded(stored.data, stored.metadata!), RENAMED.upcast)).toEqual({ type: 'Renamed', version: 2, data: { name: 'n' } });
  });

  it('upcasts an older version as stored, and takes an event stored without a version for v1', () => {
    expect(toDomainEvent(recorded({ title: 't' }, { version: 1 }), RENAMED.upcast)).toEqual({ type: 'Renamed', version: 2, data: { name: 't' } });
    expect(toDomainEvent(recorded({ title: 't' }, {}), RENAMED.upcast)).toEqual({ type: 'Renamed', version: 2, data: { name: 't' } });
  });

  it('refuses a version newer than the code, naming the event', () =>
    expect(() => toDomainEvent(recorded({ name: 'n' }, { version: 3 }), RENAMED.upcast)).toThrow(
      'cannot read sample event Renamed v3: this code reads up to v2',
    ));
});

describe('AggregateRepository over EventStoreDB, talking to a node that is no longer the leader', () => {
  type Counted = DomainEvent<'Counted', { n: number }>;
  const COUNTED = eventVersions<Counted>('counter', { Counted: [] });
  const counter: Decider<'count', Counted, number> = {
    initialState: 0,
    decide: (_command, state) => [COUNTED.event('Counted', { n: state + 1 })],
    evolve: (_state, event) => event.data.n,
  };
  const nodes: FakeEventStoreDb[] = [];
  let store: EventStoreDbEventStore | undefined;
  afterEach(async () => {
    await store?.close();
    await Promise.all(nodes.splice(0).map((node) => node.stop()));
  });

  it('decides on the leader’s stream, not on a follower’s stale copy (which would conflict until it gave up)', async () => {
    const leader = await FakeEventStoreDb.start({ batchAppend: true });
    const follower = await FakeEventStoreDb.start({ batchAppend: true });
    nodes.push(leader, follower);
    follower.behaviour.followerOf = { host: '127.0.0.1', port: leader.port };
    follower.behaviour.forwardAppendsTo = leader;
    const counted = (n: number) => ({ type: 'Counted', data: { n }, metadata: { version: 1 } });
    leader.write('counter-1', [counted(1), counted(2)]);
    follower.write('counter-1', [counted(1)]);
    store = EventStoreDbEventStore.connect(follower.connectionString, { logger: { warn: () => undefined, error: () => undefined } });
    const repository = new AggregateRepository(store, counter, COUNTED.upcast);

    expect((await repository.load('counter-1')).state).toBe(2);
    const decided = await repository.execute('counter-1', 'count', {});

    expect(decided.state).toBe(3);
    expect(leader.log.filter((event) => event.streamId === 'counter-1').map((event) => JSON.parse(Buffer.from(event.data).toString()).n)).toEqual([1, 2, 3]);
  });
});

describe('commands racing on one stream', () => {
  type Counted = DomainEvent<'Counted', { n: number }>;
  const COUNTS = eventVersions<Counted>('race', { Counted: [] });
  const counting: Decider<'count', Counted, number> = {
    initialState: 0,
    decide: (_command, n) => [COUNTS.event('Counted', { n: n + 1 })],
    evolve: (_n, event) => event.data.n,
  };

  it('all succeed, one after another, when a hundred run at once in one process (two repositories included)', async () => {
    const events = SqliteEventStore.open(':memory:');
    try {
      const first = new AggregateRepository(events, counting, COUNTS.upcast);
      const second = new AggregateRepository(events, counting, COUNTS.upcast);
      const outcomes = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => (i % 2 ? first : second).execute('race-1', 'count', {})));
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      expect((await events.readStream('race-1')).map((event) => event.data.n)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    } finally {
      await events.close();
    }
  });

  it('decides again after another process appended first, and gives up only after several conflicts', async () => {
    const events = SqliteEventStore.open(':memory:');
    try {
      const repository = new AggregateRepository(events, counting, COUNTS.upcast, 3);
      const append = events.append.bind(events);
      let foreign = 2;
      // A writer elsewhere gets in first twice: the command is decided again on its events.
      jest.spyOn(events, 'append').mockImplementation(async (...args: Parameters<typeof events.append>) => {
        if (foreign-- > 0) await append(args[0], [{ ...args[1][0], id: crypto.randomUUID() }], { expectedRevision: 'any' });
        return append(...args);
      });
      expect((await repository.execute('race-2', 'count', {})).state).toBe(3);
      foreign = 10;
      await expect(repository.execute('race-2', 'count', {})).rejects.toThrow(WrongExpectedRevisionError);
    } finally {
      jest.restoreAllMocks();
      await events.close();
    }
  });

  it('decides on the stream as the caller just read it without reading it again, and again on the stream as it is when that read is stale', async () => {
    const events = SqliteEventStore.open(':memory:');
    try {
      const repository = new AggregateRepository(events, counting, COUNTS.upcast);
      await repository.execute('race-3', 'count', {});
      const known = await repository.load('race-3');
      const reads = jest.spyOn(events, 'readStream');
      expect((await repository.execute('race-3', 'count', {}, known)).state).toBe(2);
      expect(reads).not.toHaveBeenCalled();

      // `known` is stale now (revision 0, the stream is at 1): the append expecting it fails, and the stream is read.
      expect((await repository.execute('race-3', 'count', {}, known)).state).toBe(3);
      expect(reads).toHaveBeenCalledTimes(1);
      expect((await events.readStream('race-3')).map((event) => event.data.n)).toEqual([1, 2, 3]);
    } finally {
      jest.restoreAllMocks();
      await events.close();
    }
  });
});
