import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { BusLogger } from './bus-logger';
import { DeliveredMessage } from './bus.port';
import { InProcessBus } from './in-process-bus';
import { MESSAGE_RETENTION_MS, SqliteBusStore } from './sqlite-bus-store';
import { busContract } from './testing/bus.contract';
import { deferred, waitFor } from './testing/wait-for';

// Failures the tests provoke on purpose (thrown handlers, maxDeliver) would only add noise.
const quietLogger: BusLogger = { warn: () => undefined, error: () => undefined };

busContract('InProcessBus in memory', async () => InProcessBus.open({ logger: quietLogger }));

const contractDir = mkdtempSync(join(tmpdir(), 'in-process-bus-'));
busContract(
  'InProcessBus on a SQLite file',
  async () => InProcessBus.open({ file: join(contractDir, 'bus.db'), logger: quietLogger }),
  async () => rmSync(contractDir, { recursive: true, force: true }),
);

describe('InProcessBus durability on a file', () => {
  let dir: string;
  let file: string;
  const open = () => InProcessBus.open({ file, logger: quietLogger });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'in-process-bus-'));
    file = join(dir, 'bus.db');
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores the publishes of one turn of the event loop in one commit, in the order they were made', async () => {
    const bus = open();
    const walBytes = () => statSync(`${file}-wal`).size;
    await bus.publish('evt.group.warm-up', {});
    // Each commit appends the pages it changed and a commit frame to the WAL: one commit of twenty
    // messages writes far less than twenty commits of one.
    const before = walBytes();
    for (let i = 0; i < 20; i++) await bus.publish('evt.group.apart', { i });
    const apart = walBytes() - before;
    await Promise.all(Array.from({ length: 20 }, (_, i) => bus.publish('evt.group.together', { i })));
    const together = walBytes() - before - apart;
    expect(together * 4).toBeLessThan(apart);

    const seen: number[] = [];
    await bus.consume<{ i: number }>({ durable: 'group-order', subject: 'evt.group.together' }, async (message) => void seen.push(message.data.i));
    await waitFor(() => seen.length === 20, 'the grouped messages');
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await bus.close();
  });

  it('stores a publish made just before close', async () => {
    const bus = open();
    const published = bus.publish('evt.closing.a', { id: 'last' });
    await bus.close();
    await published;
    const reopened = open();
    const seen: string[] = [];
    await reopened.consume<{ id: string }>({ durable: 'closing', subject: 'evt.closing.>' }, async (message) => void seen.push(message.data.id));
    await waitFor(() => seen.length === 1, 'the message published before close');
    await reopened.close();
  });

  it('keeps unacked messages and consumer positions across close and reopen', async () => {
    const options = { durable: 'reopen', subject: 'evt.reopen.>' };
    const seen: Array<[string, number]> = [];
    const record = async (message: DeliveredMessage<{ id: string }>) => {
      seen.push([message.data.id, message.deliveryCount]);
      // 'retried' stays unacked: it is due again long after the bus is closed.
      return message.data.id === 'retried' && message.deliveryCount === 1 ? { retryInMs: 300 } : undefined;
    };

    const first = open();
    await first.consume(options, record);
    await first.publish('evt.reopen.a', { id: 'acked' });
    await first.publish('evt.reopen.a', { id: 'retried' });
    await waitFor(() => seen.length >= 2, 'both messages');
    await first.close();

    const publisher = open();
    await publisher.publish('evt.reopen.a', { id: 'while-closed' });
    await publisher.close();

    const second = open();
    await second.consume(options, record);
    await waitFor(() => seen.length >= 4, 'the unacked and the new message');
    // Nothing left that could come again: both are acked.
    await waitFor(async () => (await second.pending(options.durable)) === 0, 'nothing pending');
    await second.close();

    // 'while-closed' and the second 'retried' may come in either order, depending on how fast the reopen was.
    expect(seen.slice(0, 2)).toEqual([
      ['acked', 1],
      ['retried', 1],
    ]);
    expect(seen.slice(2).sort()).toEqual([
      ['retried', 2],
      ['while-closed', 1],
    ]);
  });

  it('remembers msgIds across reopen', async () => {
    const first = open();
    await first.publish('evt.dedupe.a', { id: 'original' }, { msgId: 'same' });
    await first.close();

    const second = open();
    await second.publish('evt.dedupe.a', { id: 'duplicate' }, { msgId: 'same' });
    const seen: string[] = [];
    await second.consume<{ id: string }>({ durable: 'dedupe', subject: 'evt.dedupe.>' }, async (message) => {
      seen.push(message.data.id);
    });
    await waitFor(() => seen.length >= 1, 'the message');
    // A stored duplicate would still be pending.
    await waitFor(async () => (await second.pending('dedupe')) === 0, 'nothing pending');
    await second.close();

    expect(seen).toEqual(['original']);
  });

  it('redelivers, once restarted, the message a killed process was handling', async () => {
    const options = { durable: 'crash', subject: 'evt.crash.>', ackWaitMs: 500 };
    const publisher = open();
    await publisher.publish('evt.crash.a', { id: 'in-flight' });
    await publisher.close();

    const child = await startHungConsumer(file, options);
    child.kill('SIGKILL');
    await new Promise((exited) => child.once('exit', exited));

    const restarted = open();
    const seen: Array<[string, number]> = [];
    await restarted.consume<{ id: string }>(options, async (message) => {
      seen.push([message.data.id, message.deliveryCount]);
    });
    await waitFor(() => seen.length >= 1, 'the redelivery after the lease ran out');
    await waitFor(async () => (await restarted.pending(options.durable)) === 0, 'nothing pending');
    await restarted.close();

    expect(seen).toEqual([['in-flight', 2]]);
  });
});

describe('InProcessBus parked messages on a file', () => {
  it('adds the parking columns to a file written before they existed, and lists what it had parked', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bus-migrate-')), 'bus.sqlite');
    const old = new Database(file);
    old.exec(`
      CREATE TABLE bus_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, subject TEXT NOT NULL, msg_id TEXT UNIQUE, data TEXT NOT NULL, headers TEXT NOT NULL, published_at INTEGER NOT NULL);
      CREATE TABLE bus_consumers (durable TEXT PRIMARY KEY, filter TEXT NOT NULL, cursor INTEGER NOT NULL);
      CREATE TABLE bus_deliveries (durable TEXT NOT NULL, seq INTEGER NOT NULL, due_at INTEGER NOT NULL, delivery_count INTEGER NOT NULL,
        parked INTEGER NOT NULL DEFAULT 0, leased INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (durable, seq));
      INSERT INTO bus_messages (subject, data, headers, published_at) VALUES ('evt.old.a', '{"id":"old"}', '{"x-correlation-id":"c-old"}', 1700000000000);
      INSERT INTO bus_consumers VALUES ('old', 'evt.old.>', 1);
      INSERT INTO bus_deliveries (durable, seq, due_at, delivery_count, parked) VALUES ('old', 1, 0, 100, 1);
    `);
    old.close();

    // Two processes opening the old file together: the columns are added once.
    const [bus, beside] = [InProcessBus.open({ file, logger: quietLogger }), InProcessBus.open({ file, logger: quietLogger })];
    try {
      expect(await bus.listParked()).toEqual([
        {
          id: 'old:1',
          durable: 'old',
          subject: 'evt.old.a',
          data: { id: 'old' },
          headers: { 'x-correlation-id': 'c-old' },
          deliveryCount: 100,
          parkedAt: new Date(1700000000000).toISOString(),
          reason: 'unknown (parked before reasons were recorded)',
        },
      ]);
      const seen: Array<[string, number]> = [];
      await beside.consume<{ id: string }>(
        { durable: 'old', subject: 'evt.old.>' },
        async (message) => void seen.push([message.data.id, message.deliveryCount]),
      );
      // Replayed through one bus, delivered by the consumer of the other (which polls the file).
      await bus.replayParked('old:1');
      await waitFor(() => seen.length >= 1, 'the replayed message');
      expect(seen).toEqual([['old', 1]]);
      expect(await bus.listParked()).toEqual([]);
    } finally {
      await bus.close();
      await beside.close();
    }
  });
});

describe('in-process bus owned by one process', () => {
  it("releases a dead run's leases on open, so the work resumes at once rather than after the ack wait", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bus-release-')), 'bus.sqlite');
    const options = { durable: 'owned', subject: 'evt.owned.>', ackWaitMs: 60_000 };
    const publisher = InProcessBus.open({ file });
    await publisher.publish('evt.owned.a', { id: 'in-flight' });
    await publisher.close();

    const child = await startHungConsumer(file, options);
    child.kill('SIGKILL');
    await new Promise((exited) => child.once('exit', exited));

    const restarted = InProcessBus.open({ file, releaseLeasesOnOpen: true });
    const seen: Array<[string, number]> = [];
    const started = Date.now();
    await restarted.consume<{ id: string }>(options, async (message) => {
      seen.push([message.data.id, message.deliveryCount]);
    });
    await waitFor(() => seen.length >= 1, 'the redelivery right after the restart', 5_000);
    await restarted.close();
    expect(seen).toEqual([['in-flight', 2]]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('keeps a delayed retry delayed when releasing leases', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bus-release-')), 'bus.sqlite');
    const first = InProcessBus.open({ file });
    await first.publish('evt.later.a', { id: 'later' });
    let handled = 0;
    await first.consume({ durable: 'later', subject: 'evt.later.>' }, async () => {
      handled++;
      return { retryInMs: 60_000 };
    });
    await waitFor(() => handled >= 1, 'the first delivery');
    await first.close();

    const second = InProcessBus.open({ file, releaseLeasesOnOpen: true });
    const seen: string[] = [];
    await second.consume<{ id: string }>({ durable: 'later', subject: 'evt.later.>' }, async (m) => void seen.push(m.data.id));
    // The consumer takes due messages lowest sequence first: had 'later' been made due, it would
    // come before this one.
    await second.publish('evt.later.a', { id: 'marker' });
    await waitFor(() => seen.includes('marker'), 'the marker');
    // The marker counts as settled once its ack is committed (acks of one turn share a commit).
    await waitFor(async () => (await second.progress('later')).settled === 1, "the marker's ack");
    const pending = await second.pending('later');
    await second.close();
    expect(seen).toEqual(['marker']);
    expect(pending).toBe(1);
  });
});

describe('in-process bus retention (purge)', () => {
  // Past the 24 h during which a message and its msgId are kept in any case.
  const later = () => Date.now() + MESSAGE_RETENTION_MS + 60 * 60_000;
  let dir: string;
  let file: string;
  const storedMessages = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db
        .prepare<[], { data: string }>('SELECT data FROM bus_messages ORDER BY seq')
        .all()
        .map((row) => (JSON.parse(row.data) as { id: string }).id);
    } finally {
      db.close();
    }
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bus-purge-'));
    file = join(dir, 'bus.sqlite');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('deletes old messages every durable is done with, and keeps pending, parked and recent ones', async () => {
    const bus = InProcessBus.open({ file, logger: quietLogger });
    // The store beside the bus, on the same file, to purge as if a day had passed.
    const store = new SqliteBusStore(file);
    try {
      await bus.publish('evt.retention.work.a', { id: 'acked' }, { msgId: 'm-acked' });
      await bus.publish('evt.retention.work.a', { id: 'pending' });
      await bus.publish('evt.retention.park.a', { id: 'parked' });
      // Nothing registered yet: nobody has passed anything, nothing goes.
      expect(store.purge(later())).toBe(0);

      const seen: string[] = [];
      await bus.consume<{ id: string }>({ durable: 'work', subject: 'evt.retention.work.>' }, async (message) => {
        seen.push(message.data.id);
        return message.data.id === 'pending' ? { retryInMs: 60_000 } : undefined;
      });
      await bus.consume({ durable: 'parking', subject: 'evt.retention.park.>', maxDeliver: 1 }, async () => {
        throw new Error('refused');
      });
      await waitFor(async () => seen.length >= 2 && (await bus.listParked()).length === 1, 'the deliveries and the parking');
      // The duplicate within the day is dropped.
      await bus.publish('evt.retention.work.a', { id: 'acked-duplicate' }, { msgId: 'm-acked' });

      expect(store.purge()).toBe(0); // all recent
      expect(store.purge(later())).toBe(1);
      expect(storedMessages()).toEqual(['pending', 'parked']);
      expect(store.purge(later())).toBe(0);

      // The parked message is still there to list and replay; the pending one is still pending.
      expect((await bus.listParked()).map((parked) => [parked.id, parked.data])).toEqual([['parking:3', { id: 'parked' }]]);
      expect(await bus.pending('work')).toBe(1);

      // Its msgId went with the purged message: the same id is stored anew (de-duplication holds 24 h).
      await bus.publish('evt.retention.work.a', { id: 'acked-again' }, { msgId: 'm-acked' });
      await waitFor(() => seen.includes('acked-again'), 'the republished message');
      expect(seen).toEqual(['acked', 'pending', 'acked-again']);
    } finally {
      store.close();
      await bus.close();
    }
  });

  it('keeps messages a registered durable has not passed yet, until it has', async () => {
    const bus = InProcessBus.open({ file, logger: quietLogger });
    const store = new SqliteBusStore(file);
    try {
      const options = { durable: 'slow', subject: 'evt.lagging.>' };
      const slowSeen: string[] = [];
      const record = async (message: DeliveredMessage<{ id: string }>) => void slowSeen.push(message.data.id);
      // Registered, then stopped: its cursor stays before everything published below.
      await (await bus.consume(options, record)).stop();
      const fastSeen: string[] = [];
      await bus.consume<{ id: string }>({ durable: 'fast', subject: 'evt.lagging.>' }, async (message) => void fastSeen.push(message.data.id));
      await bus.publish('evt.lagging.a', { id: 'one' });
      await bus.publish('evt.lagging.a', { id: 'two' });
      await waitFor(() => fastSeen.length === 2, 'the fast durable to ack both');

      expect(store.purge(later())).toBe(0);
      expect(storedMessages()).toEqual(['one', 'two']);

      await bus.consume(options, record);
      await waitFor(async () => slowSeen.length === 2 && (await bus.pending('slow')) === 0, 'the slow durable to ack both');
      expect(store.purge(later())).toBe(2);
      expect(storedMessages()).toEqual([]);
    } finally {
      store.close();
      await bus.close();
    }
  });

  it('purges on its own every purgeIntervalMs', async () => {
    const bus = InProcessBus.open({ file, logger: quietLogger, purgeIntervalMs: 50 });
    try {
      const seen: string[] = [];
      await bus.consume<{ id: string }>({ durable: 'timer', subject: 'evt.timer.>' }, async (message) => void seen.push(message.data.id));
      await bus.publish('evt.timer.a', { id: 'old' });
      await bus.publish('evt.timer.a', { id: 'recent' });
      await waitFor(async () => seen.length === 2 && (await bus.pending('timer')) === 0, 'both acked');
      // Age the first message past the retention, as if it had been published two days ago.
      const db = new Database(file);
      db.prepare('UPDATE bus_messages SET published_at = published_at - ? WHERE seq = 1').run(2 * MESSAGE_RETENTION_MS);
      db.close();
      await waitFor(() => storedMessages().length === 1, 'the periodic purge');
      expect(storedMessages()).toEqual(['recent']);
    } finally {
      await bus.close();
    }
  });
});

/** Runs testing/hung-consumer.fixture.ts in a child process and resolves once its handler holds a message. */
async function startHungConsumer(file: string, options: { durable: string; subject: string; ackWaitMs: number }): Promise<ChildProcess> {
  const fixture = resolve(__dirname, 'testing/hung-consumer.fixture.ts');
  const child = spawn(process.execPath, ['-r', '@swc-node/register', fixture, file, options.durable, options.subject, String(options.ackWaitMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await waitFor(() => output.includes('handling') || child.exitCode !== null, 'the child process to take the message', 15_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  if (!output.includes('handling')) throw new Error(`hung consumer exited early:\n${output}`);
  return child;
}

describe('in-process bus lanes', () => {
  afterEach(() => jest.restoreAllMocks());

  it('wakes one idle lane of a durable per published message, not all of them', async () => {
    const bus = InProcessBus.open({ logger: quietLogger, pollIntervalMs: 60_000 });
    const seen: number[] = [];
    const claim = jest.spyOn(SqliteBusStore.prototype, 'claim');
    for (let lane = 0; lane < 8; lane++)
      await bus.consume<{ n: number }>({ durable: 'lanes', subject: 'evt.lanes.>' }, async (message) => void seen.push(message.data.n));
    // Every lane has looked once, found nothing and is asleep (the poll is a minute away).
    await waitFor(() => claim.mock.calls.length === 8, "each lane's first look");
    await new Promise((resolve) => setTimeout(resolve, 20));
    claim.mockClear();

    await bus.publish('evt.lanes.a', { n: 1 });
    await waitFor(() => seen.length === 1, 'the message');
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The woken lane claims it, then finds nothing more: two claims, where eight lanes would make nine.
    expect(claim.mock.calls.length).toBeLessThanOrEqual(2);

    // A burst still spreads over the lanes and every message is handled once.
    claim.mockClear();
    await Promise.all(Array.from({ length: 40 }, (_, i) => bus.publish('evt.lanes.a', { n: i + 2 })));
    await waitFor(() => seen.length === 41, 'the burst');
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    await bus.close();
  });

  it('has a lane that claims hand what it claimed for idle lanes to them at once: one claim for the lot', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bus-lanes-')), 'bus.sqlite');
    const bus = InProcessBus.open({ file, logger: quietLogger, pollIntervalMs: 60_000 });
    // Published from another process on the file: nothing wakes this one's lanes for them.
    const other = InProcessBus.open({ file, logger: quietLogger, pollIntervalMs: 60_000 });
    const gate = deferred();
    const inFlight = new Set<string>();
    let mostInFlight = 0;
    for (let lane = 0; lane < 4; lane++)
      await bus.consume<{ id: string }>({ durable: 'together', subject: 'evt.together.>' }, async (message) => {
        inFlight.add(message.data.id);
        mostInFlight = Math.max(mostInFlight, inFlight.size);
        await gate.promise;
        inFlight.delete(message.data.id);
      });
    await bus.publish('evt.together.a', { id: 'A' });
    await waitFor(() => inFlight.has('A'), 'A in a lane');
    for (const id of ['B', 'C', 'D']) await other.publish('evt.together.a', { id });
    const claim = jest.spyOn(SqliteBusStore.prototype, 'claim');

    gate.resolve();
    await waitFor(async () => (await bus.progress('together')).settled === 4, 'all four settled');
    // A's lane claimed B, C and D in one go and handed two of them to idle lanes, which had not
    // looked since (their poll is a minute away): three handled side by side.
    expect(claim.mock.calls[0][4]).toBe(4);
    expect(mostInFlight).toBeGreaterThanOrEqual(3);
    expect(await bus.pending('together')).toBe(0);
    await other.close();
    await bus.close();
  });
});

describe('in-process bus polling', () => {
  afterEach(() => jest.restoreAllMocks());

  it("claims nothing while nobody writes the file, and finds another process's publishes and replays at its next look", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bus-poll-')), 'bus.sqlite');
    const bus = InProcessBus.open({ file, logger: quietLogger, pollIntervalMs: 20 });
    const other = InProcessBus.open({ file, logger: quietLogger, pollIntervalMs: 60_000 });
    const seen: string[] = [];
    let failFirst = true;
    for (let lane = 0; lane < 8; lane++)
      await bus.consume<{ id: string }>({ durable: 'polled', subject: 'evt.polled.>', maxDeliver: 1 }, async (message) => {
        if (message.data.id === 'parked' && failFirst) {
          failFirst = false;
          throw new Error('first delivery fails');
        }
        seen.push(message.data.id);
      });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const claim = jest.spyOn(SqliteBusStore.prototype, 'claim');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Eight lanes polling every 20 ms would have claimed about 120 times.
    expect(claim.mock.calls.length).toBe(0);

    // Published by another process: found at the bus's next look, handled by several lanes.
    await Promise.all(Array.from({ length: 6 }, (_, i) => other.publish('evt.polled.a', { id: `m${i}` })));
    await waitFor(() => seen.length === 6, 'the messages of the other process');
    expect([...seen].sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);

    // Parked here, replayed by the other process (as the ops CLI does): found at the next look too.
    await other.publish('evt.polled.a', { id: 'parked' });
    await waitFor(async () => (await other.listParked({ durable: 'polled' })).length === 1, 'the parked message');
    const [parked] = await other.listParked({ durable: 'polled' });
    await other.replayParked(parked.id);
    await waitFor(() => seen.includes('parked'), 'the replayed message');
    await other.close();
    await bus.close();
  });
});

describe('SqliteBusStore claims', () => {
  const published = (store: SqliteBusStore, count: number) =>
    Promise.all(Array.from({ length: count }, (_, i) => store.append('evt.claims.a', JSON.stringify({ n: i + 1 }), {}, undefined)));

  it('leases up to the number asked for, oldest first, parking spent ones on the way without counting them', async () => {
    const store = new SqliteBusStore(':memory:');
    store.registerConsumer('claims', 'evt.claims.>');
    await published(store, 4);
    // #1 is on its last allowed delivery (maxDeliver 1), and its lease has run out.
    const [spent] = store.claim('claims', 'evt.claims.>', 0, 1, 1).claimed;
    expect(spent.seq).toBe(1);

    const { claimed, parked } = store.claim('claims', 'evt.claims.>', 60_000, 1, 2);
    expect(parked.map((p) => p.seq)).toEqual([1]);
    expect(claimed.map((c) => [c.seq, c.deliveryCount, JSON.parse(c.data)])).toEqual([
      [2, 1, { n: 2 }],
      [3, 1, { n: 3 }],
    ]);
    expect(store.claim('claims', 'evt.claims.>', 60_000, 1, 5).claimed.map((c) => c.seq)).toEqual([4]);
    store.close();
  });

  it('answers a claim with nothing to take without the write lock (an idle poll commits nothing)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bus-idle-claim-')), 'bus.sqlite');
    const store = new SqliteBusStore(file);
    store.registerConsumer('claims', 'evt.claims.>');
    await published(store, 1);
    await store.ack('claims', store.claim('claims', 'evt.claims.>', 60_000, 5, 1).claimed[0].seq);
    // Another process holds the write lock: a claim that needed it would wait for it (5 s), then fail.
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      const started = Date.now();
      expect(store.claim('claims', 'evt.claims.>', 60_000, 5, 4)).toEqual({ claimed: [], parked: [] });
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      other.exec('ROLLBACK');
      other.close();
      store.close();
    }
  });

  it('gives back a delivery claimed and never handled: due at once, its delivery count as before', async () => {
    const store = new SqliteBusStore(':memory:');
    store.registerConsumer('claims', 'evt.claims.>');
    await published(store, 2);
    const [first, second] = store.claim('claims', 'evt.claims.>', 60_000, 5, 2).claimed;
    store.unclaim('claims', second);
    await store.ack('claims', first.seq);

    const again = store.claim('claims', 'evt.claims.>', 60_000, 5, 2).claimed;
    expect(again.map((c) => [c.seq, c.deliveryCount])).toEqual([[2, 1]]);
    // Settled meanwhile: giving it back changes nothing.
    await store.ack('claims', again[0].seq);
    store.unclaim('claims', again[0]);
    expect(store.claim('claims', 'evt.claims.>', 60_000, 5, 2).claimed).toEqual([]);
    store.close();
  });
});
