import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import canonicalize from 'canonicalize';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { EventStore, EventToAppend, RecordedEvent, WrongExpectedRevisionError } from './event-store.port';
import { DuplicateEventIdError, SqliteEventStore } from './sqlite-event-store';
import { RecentEvents } from './recent-events';
import { eventStoreContract } from './testing/event-store.contract';
import { SeededRandom, seededRandom } from './testing/seeded-random';

eventStoreContract('SQLite in memory', async () => SqliteEventStore.open(':memory:'));

const directories = new Map<EventStore, string>();
eventStoreContract(
  'SQLite file',
  async () => {
    const directory = mkdtempSync(join(tmpdir(), 'event-store-'));
    const store = SqliteEventStore.open(join(directory, 'events.db'));
    directories.set(store, directory);
    return store;
  },
  async (store) => {
    rmSync(directories.get(store)!, { recursive: true, force: true });
    directories.delete(store);
  },
);

eventStoreContract(
  'SQLite file, appends in a writer thread',
  async () => {
    const directory = mkdtempSync(join(tmpdir(), 'event-store-'));
    const store = SqliteEventStore.open(join(directory, 'events.db'), { appendsInThread: true });
    directories.set(store, directory);
    return store;
  },
  async (store) => {
    rmSync(directories.get(store)!, { recursive: true, force: true });
    directories.delete(store);
  },
);

describe('SqliteEventStore', () => {
  let directory: string;
  let file: string;
  let opened: SqliteEventStore[];

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'event-store-'));
    file = join(directory, 'events.db');
    opened = [];
  });

  afterEach(async () => {
    await Promise.all(opened.map((store) => store.close()));
    rmSync(directory, { recursive: true, force: true });
  });

  function open(options?: { pollIntervalMs?: number; appendsInThread?: boolean }): SqliteEventStore {
    const store = SqliteEventStore.open(file, options);
    opened.push(store);
    return store;
  }

  const newEvents = (count: number): EventToAppend[] => Array.from({ length: count }, (_, i) => ({ id: ulidToUuid(ulid()), type: 'Tested', data: { n: i } }));

  function record(store: SqliteEventStore, streamPrefixes?: string[]) {
    const events: RecordedEvent[] = [];
    store.subscribeToAll({ streamPrefixes, onEvent: async (event) => void events.push(event) });
    return events;
  }

  async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  describe('on a file shared by several processes', () => {
    it('delivers appends made by the other one, by polling', async () => {
      const server = open({ pollIntervalMs: 20 });
      const opsCli = open();
      const seen = record(server);

      await opsCli.append('dispatch-1', newEvents(2), { expectedRevision: 'no_stream' });
      await server.append('dispatch-2', newEvents(1), { expectedRevision: 'no_stream' });
      await opsCli.append('dispatch-1', newEvents(1), { expectedRevision: 1 });

      await waitFor(() => seen.length === 4, 'the 4 events');
      expect(seen.map((event) => [event.streamId, event.revision])).toEqual([
        ['dispatch-1', 0],
        ['dispatch-1', 1],
        ['dispatch-2', 0],
        ['dispatch-1', 2],
      ]);
    });

    it('checks expected revisions against the other one’s appends', async () => {
      const first = open();
      const second = open();
      await first.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' });

      await expect(second.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(second.append('dispatch-1', newEvents(1), { expectedRevision: 0 })).resolves.toMatchObject({
        nextRevision: 1,
      });
    });

    it('follows real concurrent writer processes without gaps or reordering', async () => {
      const subscriber = open({ pollIntervalMs: 20 });
      const seen = record(subscriber);
      const writers = ['a', 'b', 'c'];
      const rounds = 100;

      await Promise.all(
        writers.map((writer) =>
          promisify(execFile)(
            process.execPath,
            ['-r', '@swc-node/register', join(__dirname, 'testing/concurrent-writer.process.ts'), file, writer, String(rounds)],
            { cwd: join(__dirname, '../../..') },
          ),
        ),
      );

      const total = writers.length * rounds * 2;
      await waitFor(() => seen.length >= total, `the ${total} events`);
      expect(seen).toHaveLength(total);
      // A fresh file and no rolled-back inserts: positions are exactly 1..total, in delivery order.
      expect(seen.map((event) => Number(event.position))).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      for (const streamId of ['shared-1', ...writers.map((writer) => `own-${writer}`)]) {
        const revisions = seen.filter((event) => event.streamId === streamId).map((event) => event.revision);
        expect(revisions).toEqual(Array.from({ length: revisions.length }, (_, i) => i));
      }
    }, 30_000);

    it('writes the file in WAL mode, so readers and the writer do not block each other', async () => {
      open();
      const raw = new Database(file, { readonly: true });
      try {
        expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      } finally {
        raw.close();
      }
    });
  });

  describe('appends in a writer thread', () => {
    it('refuses each append of a group on its own, with the error and what it carries', async () => {
      const store = open({ appendsInThread: true });
      const [a, b] = newEvents(2);
      await store.append('elsewhere', [b], { expectedRevision: 'no_stream' });
      const [fine, conflicting, duplicate] = await Promise.allSettled([
        store.append('dispatch-1', [a], { expectedRevision: 'no_stream' }),
        store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' }),
        store.append('dispatch-2', [b], { expectedRevision: 'no_stream' }),
      ]);
      expect(fine).toMatchObject({ status: 'fulfilled', value: { nextRevision: 0 } });
      expect(conflicting).toMatchObject({ status: 'rejected', reason: expect.any(WrongExpectedRevisionError) });
      expect(conflicting).toMatchObject({ reason: { streamId: 'dispatch-1', expected: 'no_stream', actual: 0 } });
      expect(duplicate).toMatchObject({ status: 'rejected', reason: expect.any(DuplicateEventIdError) });
      expect(duplicate).toMatchObject({ reason: { streamId: 'dispatch-2', eventIds: [b.id] } });
      // A retry of an append that succeeded gets its answer again.
      await expect(store.append('dispatch-1', [a], { expectedRevision: 'no_stream' })).resolves.toMatchObject({ nextRevision: 0 });
    });

    it('hands its subscriptions the events it committed, and its reads see them', async () => {
      const store = open({ appendsInThread: true });
      const seen: string[] = [];
      store.subscribeToAll({ onEvent: async (event) => void seen.push(event.streamId) });
      await store.append('dispatch-1', newEvents(2), { expectedRevision: 'no_stream' });
      expect((await store.readStream('dispatch-1')).map((event) => event.revision)).toEqual([0, 1]);
      await waitFor(() => seen.length === 2, 'the two events');
    });

    it('writes appends made just before close instead of dropping them, and ends its thread', async () => {
      const store = open({ appendsInThread: true });
      const appended = store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' });
      await store.close();
      await expect(appended).resolves.toMatchObject({ nextRevision: 0 });
      expect(await open().readStream('dispatch-1')).toHaveLength(1);
    });
  });

  describe('group commit', () => {
    const walBytes = () => statSync(`${file}-wal`).size;

    it.each([
      ['on its connection', false],
      ['in its writer thread', true],
    ])('writes the appends of one turn of the event loop in one transaction (%s): one commit, not one per append', async (_, appendsInThread) => {
      const store = open({ appendsInThread });
      await store.append('warm-up', newEvents(1), { expectedRevision: 'no_stream' });
      // A commit writes every page it changed, plus a commit frame, to the WAL: twenty commits of
      // one event each write the same few pages twenty times; one commit of twenty, once.
      const before = walBytes();
      for (let i = 0; i < 20; i++) await store.append(`apart-${i}`, newEvents(1), { expectedRevision: 'no_stream' });
      const apart = walBytes() - before;
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(`together-${i}`, newEvents(1), { expectedRevision: 'no_stream' })));
      const together = walBytes() - before - apart;
      expect(together * 4).toBeLessThan(apart);
    });

    it('checks each append of a group on its own, in the order they were made, and fails only the refused one', async () => {
      const store = open();
      const [first, conflicting, second, third] = await Promise.allSettled([
        store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' }),
        store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' }),
        store.append('dispatch-1', newEvents(1), { expectedRevision: 0 }),
        store.append('dispatch-2', newEvents(2), { expectedRevision: 'no_stream' }),
      ]);
      expect(first).toMatchObject({ status: 'fulfilled', value: { nextRevision: 0 } });
      expect(conflicting).toMatchObject({ status: 'rejected', reason: expect.any(WrongExpectedRevisionError) });
      expect(second).toMatchObject({ status: 'fulfilled', value: { nextRevision: 1 } });
      expect(third).toMatchObject({ status: 'fulfilled', value: { nextRevision: 1 } });
      expect((await store.readStream('dispatch-1')).map((e) => e.revision)).toEqual([0, 1]);
      expect(await store.readStream('dispatch-2')).toHaveLength(2);
    });

    it('rolls back a refused append of a group entirely, not only its last event', async () => {
      const store = open();
      const taken = newEvents(1);
      await store.append('elsewhere', taken, { expectedRevision: 'no_stream' });
      const [clash, fine] = await Promise.allSettled([
        store.append('dispatch-1', [...newEvents(2), ...taken], { expectedRevision: 'no_stream' }),
        store.append('dispatch-2', newEvents(1), { expectedRevision: 'no_stream' }),
      ]);
      expect(clash).toMatchObject({ status: 'rejected', reason: expect.any(DuplicateEventIdError) });
      expect(fine.status).toBe('fulfilled');
      expect(await store.readStream('dispatch-1')).toEqual([]);
    });

    it('writes appends made just before close instead of dropping them', async () => {
      const store = open();
      const appended = store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' });
      await store.close();
      await expect(appended).resolves.toMatchObject({ nextRevision: 0 });
      expect(await open().readStream('dispatch-1')).toHaveLength(1);
    });
  });

  it("has no last position while empty, then the last append's", async () => {
    const store = SqliteEventStore.open(':memory:');
    try {
      expect(await store.lastPosition()).toBeNull();
      expect(await store.readAll({ maxCount: 10 })).toEqual([]);
      await store.append('order-1', [{ id: ulidToUuid(ulid()), type: 'Placed', data: {} }], { expectedRevision: 'no_stream' });
      const { position } = await store.append('order-2', [{ id: ulidToUuid(ulid()), type: 'Placed', data: {} }], { expectedRevision: 'no_stream' });
      expect(await store.lastPosition()).toBe(position);
    } finally {
      await store.close();
    }
  });

  it('keeps events across close and reopen', async () => {
    const before = open();
    const appended = await before.append('dispatch-1', newEvents(3), { expectedRevision: 'no_stream' });
    const stored = await before.readStream('dispatch-1');
    await before.close();

    const after = open();
    expect(await after.readStream('dispatch-1')).toEqual(stored);
    const next = await after.append('dispatch-1', newEvents(1), { expectedRevision: 2 });
    expect(BigInt(next.position)).toBeGreaterThan(BigInt(appended.position));
  });

  it('polls the file once per interval for all its subscriptions, and wakes none while nothing changes', async () => {
    const store = open({ pollIntervalMs: 20 });
    for (let i = 0; i < 5; i++) record(store);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const heads = jest.spyOn(SqliteEventStore.prototype as unknown as { head(): number }, 'head');
    try {
      await new Promise((resolve) => setTimeout(resolve, 400));
      // Five subscriptions polling on their own would read the head about 100 times.
      expect(heads.mock.calls.length).toBeGreaterThan(5);
      expect(heads.mock.calls.length).toBeLessThan(30);
    } finally {
      heads.mockRestore();
    }
  });

  it('wakes its own subscriptions on append, without waiting for the next poll', async () => {
    const store = open({ pollIntervalMs: 60_000 });
    const seen = record(store);
    // Idle for certain: it has delivered what there was and found nothing more.
    await store.append('dispatch-0', newEvents(1), { expectedRevision: 'no_stream' });
    await waitFor(() => seen.length === 1, 'the first event');

    await store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' });
    // Far sooner than the next poll, whatever the machine's speed.
    await waitFor(() => seen.length === 2, 'the event appended while idle', 10_000);
  });

  it.each([false, true])(
    'tells its subscriptions of an append once the appender has gone on, in this process and with a writer thread (%s)',
    async (appendsInThread) => {
      const store = open({ pollIntervalMs: 60_000, appendsInThread });
      const seenWhen: boolean[] = [];
      let appenderWentOn = false;
      store.subscribeToAll({ onEvent: async () => void seenWhen.push(appenderWentOn) });
      await new Promise((resolve) => setImmediate(resolve));
      for (let i = 0; i < 3; i++) {
        appenderWentOn = false;
        // What a command does after its append (its view written inline) comes before the projection's look.
        await store.append(`dispatch-${i}`, newEvents(1), { expectedRevision: 'no_stream' });
        appenderWentOn = true;
        await waitFor(() => seenWhen.length === i + 1, `event ${i}`);
      }
      expect(seenWhen).toEqual([true, true, true]);
    },
  );

  it('wakes, on append, only the subscriptions of that stream (no batch read of nothing); the poll moves the others on', async () => {
    const store = open({ pollIntervalMs: 60_000 });
    const dispatches = record(store, ['dispatch-']);
    const webhooks = record(store, ['webhook-']);
    await store.append('dispatch-0', newEvents(1), { expectedRevision: 'no_stream' });
    await waitFor(() => dispatches.length === 1, 'the first event');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reads = jest.spyOn(SqliteEventStore.prototype as unknown as { head(): number }, 'head');
    try {
      await store.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' });
      await waitFor(() => dispatches.length === 2, 'the event appended while idle', 10_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // The dispatch subscription looked once; the webhook one did not look at all.
      expect(reads).toHaveBeenCalledTimes(1);
      await store.append('webhook-1', newEvents(1), { expectedRevision: 'no_stream' });
      await waitFor(() => webhooks.length === 1, 'the webhook event', 10_000);
      expect(webhooks.map((event) => event.streamId)).toEqual(['webhook-1']);
    } finally {
      reads.mockRestore();
    }
  });

  it('hands an up-to-date subscription what it just appended from memory, its own streams only, in order', async () => {
    const store = open({ pollIntervalMs: 60_000 });
    const dispatches = record(store, ['dispatch-']);
    const everything = record(store);
    const between = jest.spyOn(RecentEvents.prototype, 'between');
    try {
      await store.append('dispatch-1', newEvents(2), { expectedRevision: 'no_stream' });
      await store.append('webhook-1', newEvents(1), { expectedRevision: 'no_stream' });
      await store.append('dispatch-2', newEvents(1), { expectedRevision: 'no_stream' });
      await waitFor(() => dispatches.length === 3 && everything.length === 4, 'every event');
      expect(dispatches.map((event) => [event.streamId, event.revision, event.position])).toEqual([
        ['dispatch-1', 0, '1'],
        ['dispatch-1', 1, '2'],
        ['dispatch-2', 0, '4'],
      ]);
      expect(everything.map((event) => event.position)).toEqual(['1', '2', '3', '4']);
      // What they were handed is what the file holds.
      expect(everything).toEqual(await store.readAll({ maxCount: 10 }));
      expect(between.mock.results.some((result) => result.value !== null)).toBe(true);
    } finally {
      between.mockRestore();
    }
  });

  it('delivers a backlog larger than one read batch, in order', async () => {
    const store = open();
    await store.append('dispatch-1', newEvents(1234), { expectedRevision: 'no_stream' });
    const seen = record(store);

    await waitFor(() => seen.length === 1234, 'the backlog');
    expect(seen.map((event) => event.revision)).toEqual(Array.from({ length: 1234 }, (_, i) => i));
  });

  it('finds matching events past a long run of others when filtering', async () => {
    const store = open();
    await store.append('webhook-1', newEvents(1), { expectedRevision: 'no_stream' });
    await store.append('dispatch-1', newEvents(1200), { expectedRevision: 'no_stream' });
    await store.append('webhook-1', newEvents(1), { expectedRevision: 0 });
    const seen = record(store, ['webhook-']);

    await waitFor(() => seen.length === 2, 'the webhook events');
    await store.append('dispatch-1', newEvents(600), { expectedRevision: 1199 });
    await store.append('webhook-2', newEvents(1), { expectedRevision: 'no_stream' });
    await waitFor(() => seen.length === 3, 'the live webhook event');
    expect(seen.map((event) => event.streamId)).toEqual(['webhook-1', 'webhook-1', 'webhook-2']);
  });

  describe('event ids', () => {
    it('rejects ids stored in another stream, writing nothing', async () => {
      const store = open();
      const events = newEvents(1);
      await store.append('dispatch-1', events, { expectedRevision: 'no_stream' });

      await expect(store.append('dispatch-2', events, { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(DuplicateEventIdError);
      expect(await store.readStream('dispatch-2')).toEqual([]);
    });

    it('rejects an append only part of which was stored, writing nothing', async () => {
      const store = open();
      const [a, b, c] = newEvents(3);
      await store.append('dispatch-1', [a, b], { expectedRevision: 'no_stream' });

      await expect(store.append('dispatch-1', [b, c], { expectedRevision: 1 })).rejects.toMatchObject({
        name: 'DuplicateEventIdError',
        eventIds: [b.id],
      });
      expect(await store.readStream('dispatch-1')).toHaveLength(2);
    });

    it('names every stored id of an append whose first events are new, writing nothing', async () => {
      const store = open();
      const [a, b, c] = newEvents(3);
      await store.append('elsewhere', [b, c], { expectedRevision: 'no_stream' });

      await expect(store.append('dispatch-1', [a, b, c], { expectedRevision: 'no_stream' })).rejects.toMatchObject({
        name: 'DuplicateEventIdError',
        eventIds: [b.id, c.id],
      });
      expect(await store.readStream('dispatch-1')).toEqual([]);
      await expect(store.append('dispatch-1', [a], { expectedRevision: 'no_stream' })).resolves.toMatchObject({ nextRevision: 0 });
    });

    it('does not take a retry with another expectation for the same append', async () => {
      const store = open();
      const events = newEvents(2);
      await store.append('dispatch-1', events, { expectedRevision: 'no_stream' });

      await expect(store.append('dispatch-1', events, { expectedRevision: 3 })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    });

    it('rejects the same id twice in one append, and an empty append', async () => {
      const store = open();
      const [event] = newEvents(1);

      await expect(store.append('dispatch-1', [event, event], { expectedRevision: 'any' })).rejects.toThrow(/twice/);
      await expect(store.append('dispatch-1', [], { expectedRevision: 'any' })).rejects.toThrow(/at least one/);
      expect(await store.readStream('dispatch-1')).toEqual([]);
    });
  });

  describe('subscriptions', () => {
    it('rejects a malformed fromPosition and an empty streamPrefixes', () => {
      const store = open();
      const onEvent = async () => {};

      expect(() => store.subscribeToAll({ fromPosition: 'abc', onEvent })).toThrow(/position/);
      expect(() => store.subscribeToAll({ fromPosition: '-1', onEvent })).toThrow(/position/);
      expect(() => store.subscribeToAll({ streamPrefixes: [], onEvent })).toThrow(/streamPrefixes/);
    });

    it('can be closed from inside its own handler', async () => {
      const store = open();
      await store.append('dispatch-1', newEvents(3), { expectedRevision: 'no_stream' });
      const seen: RecordedEvent[] = [];
      let closed = false;

      const subscription = store.subscribeToAll({
        onEvent: async (event) => {
          seen.push(event);
          await subscription.close();
          closed = true;
        },
      });
      // Another subscription receiving all three shows the closed one had its chance at them.
      const witness = record(store);

      await waitFor(() => closed, 'the handler to close its subscription');
      await waitFor(() => witness.length === 3, 'the witness to receive all three');
      expect(seen).toHaveLength(1);
    });

    it('are stopped by closing the store, which awaits their in-flight handlers', async () => {
      const store = open();
      await store.append('dispatch-1', newEvents(2), { expectedRevision: 'no_stream' });
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const started: number[] = [];
      const finished: number[] = [];
      store.subscribeToAll({
        onEvent: async (event) => {
          started.push(event.revision);
          await released;
          finished.push(event.revision);
        },
      });
      await waitFor(() => started.length === 1, 'the first handler to be in flight');

      const closing = store.close();
      release();
      await closing;

      expect(finished).toEqual([0]);
      await expect(store.ping()).rejects.toThrow();
    });
  });

  it('answers ping while open', async () => {
    await expect(open().ping()).resolves.toBeUndefined();
  });

  describe('readAllForReplay (what a rebuild folds)', () => {
    const withMetadata = (metadata: Record<string, unknown> | undefined, n: number): EventToAppend => ({
      id: ulidToUuid(ulid()),
      type: 'Tested',
      data: { n, nested: { a: [1, 'é'] } },
      metadata,
    });

    it('reads what readAll reads less ids and times, with metadata as its whole-number version alone, or whole', async () => {
      const store = open();
      // As appended, and as readAllForReplay reads it: a whole-number version alone, any other metadata whole.
      const cases: Array<[Record<string, unknown> | undefined, Record<string, unknown>]> = [
        [{ accountId: 'acct_1', mode: 'test', requestId: 'req_1', version: 1 }, { version: 1 }],
        [{ version: 3, accountId: 'acct_1' }, { version: 3 }],
        [{ version: -4 }, { version: -4 }],
        [undefined, {}],
        [{ accountId: 'acct_1' }, { accountId: 'acct_1' }],
        [
          { version: '2', accountId: 'acct_1' },
          { version: '2', accountId: 'acct_1' },
        ],
        [{ version: 1.5 }, { version: 1.5 }],
        [{ version: null }, { version: null }],
        [{ version: true }, { version: true }],
        [{ nested: { version: 2 } }, { nested: { version: 2 } }],
        [
          { accountId: 'acct_1', nested: { version: 2 } },
          { accountId: 'acct_1', nested: { version: 2 } },
        ],
        [{ 'say"version': 5 }, { 'say"version': 5 }],
        [{ 'a,"version': 5 }, { 'a,"version': 5 }],
        [{ note: '{"version":6}' }, { note: '{"version":6}' }],
        [{ accountId: 'acct_1', version: 2 ** 40 }, { version: 2 ** 40 }],
        [{ version: 0 }, { version: 0 }],
      ];
      await store.append(
        'replay-1',
        cases.map(([metadata], n) => withMetadata(metadata, n)),
        { expectedRevision: 'no_stream' },
      );
      const read = await store.readAll({ maxCount: 100 });

      const replayed = await store.readAllForReplay({ maxCount: 100 });
      expect(replayed.map(({ metadata, ...rest }) => rest)).toEqual(read.map(({ id, occurredAt, metadata, ...rest }) => rest));
      expect(replayed.map((event) => event.metadata)).toEqual(cases.map(([, expected]) => expected));
      expect(replayed[0]).not.toHaveProperty('id');
      expect(replayed[0]).not.toHaveProperty('occurredAt');
    });

    it('reads one share of the streams: the shares of a split are apart, each stream in one whole, and together all', async () => {
      const store = open();
      const streams = Array.from({ length: 40 }, (_, i) => `dispatch-dsp_${i.toString(36)}${'0123456789ABCDEFGHJKMNPQRSTVWXYZ'[i % 32]}`);
      for (let i = 0; i < 120; i++) await store.append(streams[(i * 7) % streams.length], [withMetadata({ version: 1 }, i)], { expectedRevision: 'any' });
      const everything = (await store.readAllForReplay({ maxCount: 1000 })).map((event) => event.position);
      for (const count of [1, 2, 3]) {
        const shares = await Promise.all(Array.from({ length: count }, (_, index) => store.readAllForReplay({ maxCount: 1000, share: { index, of: count } })));
        const streamsOf = shares.map((events) => new Set(events.map((event) => event.streamId)));
        expect(
          shares
            .flat()
            .map((event) => event.position)
            .sort((a, b) => Number(a) - Number(b)),
        ).toEqual(everything);
        for (let a = 0; a < count; a++) for (let b = a + 1; b < count; b++) expect([...streamsOf[a]].filter((id) => streamsOf[b].has(id))).toEqual([]);
        if (count > 1) for (const events of shares) expect(events.length).toBeGreaterThan(0);
        // Paged as readAll pages: after fromPosition, at most maxCount.
        const page = await store.readAllForReplay({ fromPosition: shares[0][1].position, maxCount: 3, share: { index: 0, of: count } });
        expect(page.map((event) => event.position)).toEqual(shares[0].slice(2, 5).map((event) => event.position));
      }
    });

    it('selects as readAll does: after fromPosition, at most maxCount, by stream prefix; and refuses what it refuses', async () => {
      const store = open();
      for (let i = 0; i < 12; i++)
        await store.append(`${i % 2 ? 'webhook' : 'dispatch'}-${i % 4}`, [withMetadata({ version: 1 }, i)], { expectedRevision: 'any' });
      const positions = (events: Array<{ position: string }>) => events.map((event) => event.position);
      for (const options of [
        { maxCount: 100 },
        { fromPosition: '3', maxCount: 4 },
        { fromPosition: '2', maxCount: 100, streamPrefixes: ['dispatch-0', 'webhook-3'] },
        { fromPosition: '12', maxCount: 5 },
      ]) {
        expect(positions(await store.readAllForReplay(options))).toEqual(positions(await store.readAll(options)));
      }
      await expect(store.readAllForReplay({ maxCount: 0 })).rejects.toThrow(/maxCount/);
      for (const share of [
        { index: 2, of: 2 },
        { index: -1, of: 2 },
        { index: 0, of: 0 },
        { index: 0.5, of: 2 },
      ]) {
        await expect(store.readAllForReplay({ maxCount: 1, share })).rejects.toThrow(/share/);
      }
      await expect(store.readAllForReplay({ maxCount: 1, streamPrefixes: [] })).rejects.toThrow(/streamPrefixes/);
      await expect(store.readAllForReplay({ maxCount: 1, fromPosition: 'x' })).rejects.toThrow(/position/);
      await store.close();
      await expect(store.readAllForReplay({ maxCount: 1 })).rejects.toThrow(/closed/);
    });
  });

  describe('canonical texts (what an export hashes)', () => {
    const withData = (data: Record<string, unknown>, metadata?: Record<string, unknown>): EventToAppend => ({
      id: ulidToUuid(ulid()),
      type: 'Tested',
      data,
      metadata,
    });

    /** The stored rows as the file holds them, read on a connection of this spec's own. */
    function rows(): Array<{ event_id: string; data: string; metadata: string; canonical: number | null }> {
      const raw = new Database(file, { readonly: true });
      try {
        return raw.prepare('SELECT event_id, data, metadata, canonical FROM events ORDER BY position').all() as never;
      } finally {
        raw.close();
      }
    }

    it('flags an event whose data and metadata texts are their JCS (sorted keys), and no other', async () => {
      const store = open();
      const cases: Array<[EventToAppend, 1 | null]> = [
        [withData({ a: 1, b: { c: [{ d: 'é', e: null }], f: 1.5 } }, { accountId: 'acct_1', version: 1 }), 1],
        [withData({ a: 1 }), 1],
        [withData({ '1': 'integer-like, listed first and sorted', a: 2 }), 1],
        [withData({ b: 1, a: 2 }, { version: 1 }), null],
        [withData({ a: 1 }, { version: 1, accountId: 'acct_1' }), null],
        [withData({ a: { c: 1, b: 2 } }), null],
        [withData({ '10': 'JavaScript lists 9 first', '9': 'nine' }), null],
        [withData({ at: new Date(0) }), null],
        [withData({ a: 1, gone: undefined }), null],
      ];
      await store.append(
        'flags-1',
        cases.map(([event]) => event),
        { expectedRevision: 'no_stream' },
      );

      expect(rows().map((row) => [row.event_id, row.canonical])).toEqual(cases.map(([event, flag]) => [event.id, flag]));
      // A flagged text is its own JCS, whatever way it was written.
      for (const row of rows().filter((r) => r.canonical === 1)) {
        expect(canonicalize(JSON.parse(row.data))).toBe(row.data);
        expect(canonicalize(JSON.parse(row.metadata))).toBe(row.metadata);
      }
    });

    it('reads data and metadata as their JCS, flagged or not, the rest as readAll reads it', async () => {
      const store = open();
      const events = [
        withData({ b: 1, a: { d: [3, { g: 1, f: 2 }], c: 'é"\\n\u2028' }, n: 1e21, '10': 0, '9': -0 }, { version: 1, accountId: 'acct_1' }),
        withData({ a: 1, b: [2] }, { accountId: 'acct_1', version: 1 }),
        withData({ at: new Date(0), z: 0.1 }),
      ];
      await store.append('canonical-1', events, { expectedRevision: 'no_stream' });
      const read = await store.readAll({ maxCount: 10 });

      const canonical = await store.readAllCanonical({ maxCount: 10 });
      expect(canonical.map(({ data, metadata }) => [data, metadata])).toEqual(
        events.map((event) => [canonicalize(event.data), canonicalize(event.metadata ?? {})]),
      );
      expect(canonical.map(({ data, metadata, ...rest }) => rest)).toEqual(read.map(({ data, metadata, ...rest }) => rest));
      expect(canonical.map((event) => JSON.parse(event.data))).toEqual(read.map((event) => event.data));
    });

    it('keeps the texts as stored for readStream and readAll: their keys in the order they were appended', async () => {
      const store = open();
      const data = { b: 1, a: { d: 1, c: 2 }, '10': 'x', '9': 'y' };
      await store.append('order-1', [withData(data, { version: 1, accountId: 'acct_1' })], { expectedRevision: 'no_stream' });

      const [streamed] = await store.readStream('order-1');
      const [all] = await store.readAll({ maxCount: 1 });
      for (const event of [streamed, all]) {
        expect(JSON.stringify(event.data)).toBe(JSON.stringify(data));
        expect(Object.keys(event.data)).toEqual(['9', '10', 'b', 'a']);
        expect(Object.keys(event.metadata)).toEqual(['version', 'accountId']);
      }
      expect(rows()[0].data).toBe(JSON.stringify(data));
    });

    it('selects as readAll does: after fromPosition, up to toPosition (inclusive), at most maxCount, by stream prefix', async () => {
      const store = open();
      for (let i = 0; i < 12; i++) {
        // Every third one unsorted, so that both kinds of row are read.
        const data = i % 3 === 0 ? { n: i, a: 'unsorted' } : { a: 'sorted', n: i };
        await store.append(`${i % 2 ? 'webhook' : 'dispatch'}-${i % 4}`, [withData(data)], { expectedRevision: 'any' });
      }
      const all = await store.readAll({ maxCount: 100 });
      const positions = (events: Array<{ position: string }>) => events.map((event) => Number(event.position));
      const expected = (from: number, to: number, maxCount: number, prefixes?: string[]) =>
        all
          .filter(
            (event) =>
              Number(event.position) > from && Number(event.position) <= to && (!prefixes || prefixes.some((prefix) => event.streamId.startsWith(prefix))),
          )
          .slice(0, maxCount);

      for (const [from, to, maxCount, prefixes] of [
        [0, 12, 100, undefined],
        [3, 12, 100, undefined],
        [3, 7, 100, undefined],
        [3, 7, 2, undefined],
        [0, 0, 100, undefined],
        [7, 7, 100, undefined],
        [6, 7, 100, undefined],
        [0, 1_000_000, 100, undefined],
        [0, 12, 100, ['webhook-']],
        [2, 9, 100, ['dispatch-0', 'webhook-3']],
        [2, 9, 1, ['dispatch-']],
      ] as Array<[number, number, number, string[] | undefined]>) {
        const read = await store.readAllCanonical({
          fromPosition: from ? String(from) : undefined,
          toPosition: String(to),
          maxCount,
          streamPrefixes: prefixes,
        });
        expect([from, to, maxCount, prefixes, positions(read)]).toEqual([from, to, maxCount, prefixes, positions(expected(from, to, maxCount, prefixes))]);
        const want = expected(from, to, maxCount, prefixes);
        expect(read.map((event) => event.data)).toEqual(want.map((event) => canonicalize(event.data)));
      }
      // Without toPosition: to the end.
      expect(positions(await store.readAllCanonical({ fromPosition: '10', maxCount: 100 }))).toEqual([11, 12]);
    });

    it('refuses what readAll refuses, a malformed toPosition, and any read once closed', async () => {
      const store = open();
      await expect(store.readAllCanonical({ maxCount: 0 })).rejects.toThrow(/maxCount/);
      await expect(store.readAllCanonical({ maxCount: 1, streamPrefixes: [] })).rejects.toThrow(/streamPrefixes/);
      await expect(store.readAllCanonical({ maxCount: 1, fromPosition: 'x' })).rejects.toThrow(/position/);
      await expect(store.readAllCanonical({ maxCount: 1, toPosition: '-1' })).rejects.toThrow(/position/);
      await store.close();
      await expect(store.readAllCanonical({ maxCount: 1 })).rejects.toThrow(/closed/);
    });

    it('flags exactly the random events whose texts are their JCS, and reads every one as its JCS', async () => {
      const random = randomness(0xca4e_0001);
      const store = open();
      const appended: EventToAppend[] = [];
      for (let append = 0; append < 60; append++) {
        const events = Array.from({ length: 1 + random.int(8) }, () => withData(randomObject(random), randomObject(random)));
        appended.push(...events);
        await store.append(`random-${append % 7}`, events, { expectedRevision: 'any' });
      }
      const stored = rows();
      expect(stored).toHaveLength(appended.length);
      let flagged = 0;
      stored.forEach((row, i) => {
        const own = canonicalize(JSON.parse(row.data)) === row.data && canonicalize(JSON.parse(row.metadata)) === row.metadata;
        // Flagged: certainly its own JCS. Not flagged: not its own JCS (every random value here is plain JSON).
        expect([i, row.canonical]).toEqual([i, own ? 1 : null]);
        if (own) flagged++;
      });
      expect(flagged).toBeGreaterThan(appended.length / 10);
      expect(appended.length - flagged).toBeGreaterThan(appended.length / 10);

      const read = await store.readAllCanonical({ fromPosition: '0', maxCount: 10_000 });
      expect(read.map((event) => [event.id, event.data, event.metadata])).toEqual(
        appended.map((event) => [event.id, canonicalize(event.data), canonicalize(event.metadata)]),
      );
    });

    describe('in a file made before the canonical column', () => {
      /** The events table as the store made it before the canonical column. */
      const OLD_SCHEMA = `
        CREATE TABLE events (
          position    INTEGER PRIMARY KEY AUTOINCREMENT,
          event_id    TEXT    NOT NULL UNIQUE,
          stream_id   TEXT    NOT NULL,
          revision    INTEGER NOT NULL,
          type        TEXT    NOT NULL,
          data        TEXT    NOT NULL,
          metadata    TEXT    NOT NULL,
          occurred_at TEXT    NOT NULL,
          UNIQUE (stream_id, revision)
        )`;
      const OLD_ROWS = [
        // Keys unsorted, a number spelt 1.50 and 1e2, an escaped é: none of it is JCS.
        { id: ulidToUuid(ulid()), data: '{"b":1,"a":{"d":[1,{"f":2,"e":3}],"c":"\\u00e9"},"n":1.50,"m":1e2}', metadata: '{"version":1,"accountId":"acct_1"}' },
        // Already JCS, though not flagged.
        { id: ulidToUuid(ulid()), data: '{"a":1,"b":"x"}', metadata: '{"version":1}' },
      ];
      const columns = (db: Database.Database) => (db.pragma('table_info(events)') as Array<{ name: string }>).map((column) => column.name);

      beforeEach(() => {
        const db = new Database(file);
        try {
          db.exec(OLD_SCHEMA);
          const insert = db.prepare('INSERT INTO events (event_id, stream_id, revision, type, data, metadata, occurred_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
          OLD_ROWS.forEach((row, revision) => insert.run(row.id, 'old-1', revision, 'Tested', row.data, row.metadata, '2025-01-01T00:00:00.000Z'));
          expect(columns(db)).not.toContain('canonical');
        } finally {
          db.close();
        }
      });

      it('opens it, adding the column, and reads its events as their JCS', async () => {
        const store = open();
        const raw = new Database(file, { readonly: true });
        try {
          expect(columns(raw)).toContain('canonical');
        } finally {
          raw.close();
        }
        expect(rows().map((row) => row.canonical)).toEqual([null, null]);

        const read = await store.readAllCanonical({ maxCount: 10 });
        expect(read.map((event) => [event.id, event.streamId, event.revision, event.position, event.data, event.metadata])).toEqual([
          [OLD_ROWS[0].id, 'old-1', 0, '1', '{"a":{"c":"é","d":[1,{"e":3,"f":2}]},"b":1,"m":100,"n":1.5}', '{"accountId":"acct_1","version":1}'],
          [OLD_ROWS[1].id, 'old-1', 1, '2', '{"a":1,"b":"x"}', '{"version":1}'],
        ]);
        // readStream and readAll read the old rows as they did.
        expect((await store.readStream('old-1')).map((event) => JSON.stringify(event.data))).toEqual([
          '{"b":1,"a":{"d":[1,{"f":2,"e":3}],"c":"é"},"n":1.5,"m":100}',
          '{"a":1,"b":"x"}',
        ]);
        expect(await store.readAll({ maxCount: 10 })).toEqual(await store.readStream('old-1'));
      });

      it('appends after the old events, flagging the new ones, and opens again (and again, at once) without adding the column twice', async () => {
        const first = open();
        const second = open();
        await first.append('old-1', [withData({ a: 1 }, { version: 1 })], { expectedRevision: 1 });
        await second.append('old-1', [withData({ b: 1, a: 1 }, { version: 1 })], { expectedRevision: 2 });
        await first.close();
        const third = open();

        expect(rows().map((row) => row.canonical)).toEqual([null, null, 1, null]);
        expect((await third.readAllCanonical({ fromPosition: '2', maxCount: 10 })).map((event) => event.data)).toEqual(['{"a":1}', '{"a":1,"b":1}']);
        expect((await third.readStream('old-1')).map((event) => event.revision)).toEqual([0, 1, 2, 3]);
      });
    });
  });
});

const randomness = seededRandom;
type Random = SeededRandom;

const RANDOM_KEYS = ['', 'a', 'b', 'B', 'aa', 'é', '😀', '\uff01', '"', '1', '2', '10', '01', '-1', 'version', 'accountId'];

/** A plain JSON object, its keys now sorted (as a decide's events are), now in a random order. */
function randomObject(random: Random, depth = 0): Record<string, unknown> {
  const keys = [...new Set(Array.from({ length: random.int(5) }, () => random.pick(RANDOM_KEYS)))];
  if (random.chance(0.6)) keys.sort();
  return Object.fromEntries(keys.map((key) => [key, randomValue(random, depth + 1)]));
}

function randomValue(random: Random, depth: number): unknown {
  switch (random.int(depth >= 3 ? 4 : 6)) {
    case 0:
      return random.pick(['', 'x', 'é😀', 'a"b\\c\n\u0000\u2028', '\ud800']);
    case 1:
      return random.pick([0, -0, 1.5, 1e21, 1e-7, -3, 0.1, 2 ** 53 + 2]);
    case 2:
      return random.chance(0.5);
    case 3:
      return null;
    case 4:
      return Array.from({ length: random.int(3) }, () => randomValue(random, depth + 1));
    default:
      return randomObject(random, depth);
  }
}
