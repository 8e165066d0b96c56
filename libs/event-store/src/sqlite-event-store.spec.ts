import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { EventStore, EventToAppend, RecordedEvent, WrongExpectedRevisionError } from './event-store.port';
import { DuplicateEventIdError, SqliteEventStore } from './sqlite-event-store';
import { eventStoreContract } from './testing/event-store.contract';

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

  function open(options?: { pollIntervalMs?: number }): SqliteEventStore {
    const store = SqliteEventStore.open(file, options);
    opened.push(store);
    return store;
  }

  const newEvents = (count: number): EventToAppend[] =>
    Array.from({ length: count }, (_, i) => ({ id: ulidToUuid(ulid()), type: 'Tested', data: { n: i } }));

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

      await expect(second.append('dispatch-1', newEvents(1), { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(
        WrongExpectedRevisionError,
      );
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

  describe('group commit', () => {
    const walBytes = () => statSync(`${file}-wal`).size;

    it('writes the appends of one turn of the event loop in one transaction: one commit, not one per append', async () => {
      const store = open();
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

  it('has no last position while empty, then the last append\'s', async () => {
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

      await expect(store.append('dispatch-2', events, { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(
        DuplicateEventIdError,
      );
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

    it('does not take a retry with another expectation for the same append', async () => {
      const store = open();
      const events = newEvents(2);
      await store.append('dispatch-1', events, { expectedRevision: 'no_stream' });

      await expect(store.append('dispatch-1', events, { expectedRevision: 3 })).rejects.toBeInstanceOf(
        WrongExpectedRevisionError,
      );
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
});
