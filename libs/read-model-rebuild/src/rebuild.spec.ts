import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import workerThreads = require('node:worker_threads');
import Database from 'better-sqlite3';
import { DISPATCH_STREAM_PREFIX } from '@campaign-ops/dispatch-domain';
import { LiveProjection } from '@campaign-ops/event-sourcing';
import { EventStore, ReadAllOptions, RecordedEvent } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { READ_MODELS, readModelNamed } from './read-models';
import { checkReadModels } from './read-model-check';
import { rebuildReadModels } from './rebuild';
import { appendSyntheticHistory } from './synthetic-history';

const REBUILT = ['accounts', 'api_keys', 'dispatches', 'credit_ledgers', 'connections', 'webhook_endpoints'];

describe('rebuilding read models from the event store (embedded stores)', () => {
  let dir: string;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let stored: RecordedEvent[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rebuild-'));
    events = SqliteEventStore.open(join(dir, 'events.sqlite'));
    reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    await appendSyntheticHistory(events, 3_000);
    stored = [];
    for (
      let page = await events.readAll({ maxCount: 10_000 });
      page.length;
      page = await events.readAll({ fromPosition: page[page.length - 1].position, maxCount: 10_000 })
    )
      stored.push(...page);
    // Every projection the rebuild lists, kept live as the running services keep it: event by
    // event, each bringing its stream's documents up to it.
    const live = READ_MODELS.map((projection) => new LiveProjection(projection, events, reads));
    for (const event of stored) {
      const owner = live.filter((model) => event.streamId.startsWith(model.projection.streamPrefix));
      expect(owner).toHaveLength(1);
      await owner[0].refresh(event.streamId, event.revision);
    }
  });

  afterEach(async () => {
    await reads.close();
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every row of the rebuilt collections as stored (id, revision, the document's JSON text), by id. */
  function dump(): Record<string, unknown[]> {
    const db = new Database(join(dir, 'read-models.sqlite'), { readonly: true });
    try {
      const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((row) => row.name));
      return Object.fromEntries(
        REBUILT.map((name) => [name, tables.has(`coll_${name}`) ? db.prepare(`SELECT id, revision, doc FROM "coll_${name}" ORDER BY id`).all() : []]),
      );
    } finally {
      db.close();
    }
  }

  const stagedTables = () => {
    const db = new Database(join(dir, 'read-models.sqlite'), { readonly: true });
    const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%rebuild%'").all();
    db.close();
    return rows;
  };

  it('replays every event into fresh collections equal byte for byte to what the live projections wrote, and swaps them in', async () => {
    const before = dump();
    expect(before.dispatches.length).toBeGreaterThan(500);
    expect(before.accounts.length).toBeGreaterThan(0);
    expect(before.credit_ledgers.length).toBeGreaterThan(0);
    for (const name of REBUILT) expect(before[name].length).toBeGreaterThan(0);
    expect(REBUILT.sort()).toEqual(READ_MODELS.flatMap((model) => model.collections.map((c) => c.name)).sort());
    // Damage the live models: the rebuild must make them from the events, not copy them.
    await reads.collection('dispatches').delete((before.dispatches[3] as { id: string }).id);
    await reads.collection('credit_ledgers').update((before.credit_ledgers[0] as { id: string }).id, { balance: -1 });
    await reads.collection('api_keys').upsert({ id: 'key_stray' }, 0);

    const report = await rebuildReadModels(events, reads, READ_MODELS);

    expect(dump()).toEqual(before);
    expect(report).toMatchObject({ events: stored.length, position: stored[stored.length - 1].position });
    expect(report.collections).toEqual(expect.arrayContaining([{ name: 'dispatches', documents: before.dispatches.length }]));
    // Checkpoints: moved for the processors that only project, left alone for the others.
    await expect(reads.checkpoints.get('dispatch-views')).resolves.toBe(report.position);
    await expect(reads.checkpoints.get('account-views')).resolves.toBe(report.position);
    await expect(reads.checkpoints.get('webhook-endpoint-views')).resolves.toBe(report.position);
    await expect(reads.checkpoints.get('credit-ledgers')).resolves.toBeUndefined();
    await expect(reads.checkpoints.get('connection-views')).resolves.toBeUndefined();
    expect(stagedTables()).toEqual([]);
  });

  it('gives the same models when it can hold only a few streams in memory (a dropped stream is read again)', async () => {
    const before = dump();
    await reads.collection('dispatches').delete((before.dispatches[0] as { id: string }).id);
    await rebuildReadModels(events, reads, READ_MODELS, { maxStreamsInMemory: 1 });
    expect(dump()).toEqual(before);
  });

  it('gives the same models from a store that reads only whole events (readAll: EventStoreDB has no readAllForReplay)', async () => {
    const before = dump();
    await reads.collection('dispatches').delete((before.dispatches[0] as { id: string }).id);
    let pages = 0;
    const wholeEventsOnly: EventStore = Object.assign(Object.create(events) as EventStore, {
      readAllForReplay: undefined,
      readAll: (options: ReadAllOptions) => {
        pages++;
        return events.readAll(options);
      },
    });
    await rebuildReadModels(wholeEventsOnly, reads, READ_MODELS);
    expect(dump()).toEqual(before);
    expect(pages).toBeGreaterThan(0);
  });

  it('replays dispatches in two threads beside the other models, each one share of their streams, all written by one writer thread, making what one thread makes', async () => {
    const before = dump();
    await rebuildReadModels(events, reads, READ_MODELS, { threads: false });
    expect(dump()).toEqual(before);

    const Worker = workerThreads.Worker;
    const started: string[] = [];
    const spy = jest.spyOn(workerThreads, 'Worker').mockImplementation((file, options) => {
      started.push(String(file).replace(/^.*\//, ''));
      return new Worker(file, options);
    });
    const progress: Array<[number, number]> = [];
    try {
      await reads.collection('dispatches').delete((before.dispatches[0] as { id: string }).id);
      // A store this small is replayed in one thread unless asked.
      const report = await rebuildReadModels(events, reads, READ_MODELS, {
        threads: true,
        onProgress: (applied, fraction) => void progress.push([applied, fraction]),
      });
      expect(report.events).toBe(stored.length);
    } finally {
      spy.mockRestore();
    }
    expect(started.filter((file) => file.startsWith('replay.worker'))).toHaveLength(2);
    expect(started.filter((file) => file.startsWith('rebuild-writer.worker'))).toHaveLength(1);
    expect(dump()).toEqual(before);
    expect(progress[progress.length - 1]).toEqual([stored.length, 1]);
  });

  it('fails as a whole when the replay thread fails, leaving the live models as they were and no stand-ins', async () => {
    const before = dump();
    // A dispatch event whose data is no longer JSON: the thread replaying dispatches cannot read it.
    const db = new Database(join(dir, 'events.sqlite'));
    db.prepare("UPDATE events SET data = '{not json' WHERE position = (SELECT MAX(position) FROM events WHERE stream_id LIKE 'dispatch-%')").run();
    db.close();

    await expect(rebuildReadModels(events, reads, READ_MODELS, { threads: true })).rejects.toThrow(/replay thread failed: .*JSON/s);
    expect(dump()).toEqual(before);
    expect(stagedTables()).toEqual([]);
  });

  it('stops the other replay threads before it fails, so none goes on reading or writing after', async () => {
    // Every dispatch event unreadable: the first replay thread fails at once. The second is one
    // still replaying (it tells progress, then never ends on its own).
    const db = new Database(join(dir, 'events.sqlite'));
    db.prepare("UPDATE events SET data = '{not json' WHERE stream_id LIKE 'dispatch-%'").run();
    db.close();
    const Worker = workerThreads.Worker;
    const replays: Array<{ worker: workerThreads.Worker; exited: boolean }> = [];
    const spy = jest.spyOn(workerThreads, 'Worker').mockImplementation((file, options) => {
      const isReplay = String(file).includes('replay.worker');
      const stillReplaying = isReplay && replays.length === 1;
      const worker = stillReplaying
        ? new Worker("require('node:worker_threads').parentPort.postMessage({ progress: { applied: 1, fraction: 0 } }); setInterval(() => undefined, 1000);", {
            eval: true,
          })
        : new Worker(file, options);
      if (isReplay) {
        const replay = { worker, exited: false };
        worker.once('exit', () => (replay.exited = true));
        replays.push(replay);
      }
      return worker;
    });
    try {
      await expect(rebuildReadModels(events, reads, READ_MODELS, { threads: true })).rejects.toThrow(/replay thread failed: .*JSON/s);
      expect(replays).toHaveLength(2);
      expect(replays.map((replay) => replay.exited)).toEqual([true, true]);
    } finally {
      spy.mockRestore();
      await Promise.all(replays.map((replay) => replay.worker.terminate()));
    }
    expect(stagedTables()).toEqual([]);
  });

  it('rebuilds one model alone, leaving the others as they are', async () => {
    const before = dump();
    await reads.collection('accounts').upsert({ id: 'acct_stray' }, 0);
    await reads.collection('dispatches').delete((before.dispatches[0] as { id: string }).id);
    await rebuildReadModels(events, reads, [readModelNamed('dispatches')]);
    const after = dump();
    expect(after.dispatches).toEqual(before.dispatches);
    expect(after.accounts).toHaveLength(before.accounts.length + 1);
    expect(() => readModelNamed('webhook_deliveries')).toThrow(/no read model named webhook_deliveries; rebuildable: accounts, dispatches/);
  });

  it('takes in the events appended while it runs', async () => {
    // Reads that take a turn of the event loop, as any store but an in-process SQLite file does: the
    // appends below (committed at the next turn) then land while the rebuild runs.
    const aTurnLater = <T>(read: () => Promise<T>) => new Promise((resolve) => setImmediate(resolve)).then(read);
    const slow: EventStore = Object.assign(Object.create(events) as EventStore, {
      readAll: (options: ReadAllOptions) => aTurnLater(() => events.readAll(options)),
      readAllForReplay: (options: ReadAllOptions) => aTurnLater(() => events.readAllForReplay(options)),
    });
    let appending: Promise<number> | undefined;
    const report = await rebuildReadModels(slow, reads, READ_MODELS, {
      // The first progress report appends more launches, while the replay goes on.
      onProgress: () => void (appending ??= appendSyntheticHistory(events, 300)),
    });
    await appending;
    expect(report.events).toBeGreaterThanOrEqual(stored.length);
    const duringRebuild = dump();
    const dispatches = (await events.readAll({ fromPosition: stored[stored.length - 1].position, maxCount: 1000 })).filter((event) =>
      event.streamId.startsWith(DISPATCH_STREAM_PREFIX),
    );
    expect(dispatches.length).toBeGreaterThan(50);
    for (const event of dispatches) expect(await reads.collection('dispatches').get(event.streamId.slice(DISPATCH_STREAM_PREFIX.length))).not.toBeNull();
    // What a quiet rebuild makes of the same events: the models took in everything.
    await rebuildReadModels(events, reads, READ_MODELS);
    expect(dump()).toEqual(duringRebuild);
  });

  it('--check compares rebuilt and live models, names the differences, and changes nothing', async () => {
    const clean = await checkReadModels(events, reads, READ_MODELS);
    expect(clean.differences).toEqual([]);
    expect(clean.collections.find((c) => c.name === 'dispatches')).toMatchObject({ differences: 0 });

    const before = dump();
    const [deleted, changed] = before.dispatches.slice(0, 2) as Array<{ id: string }>;
    await reads.collection('dispatches').delete(deleted.id);
    await reads.collection('dispatches').update(changed.id, { status: 'completed', channel: 'meta_ads' });
    await reads.collection('api_keys').upsert({ id: 'key_stray' }, 0);
    const damaged = dump();

    const report = await checkReadModels(events, reads, READ_MODELS);

    expect(report.differences).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ collection: 'dispatches', id: deleted.id, kind: 'missing_from_live' }),
        expect.objectContaining({ collection: 'dispatches', id: changed.id, kind: 'differs' }),
        expect.objectContaining({ collection: 'api_keys', id: 'key_stray', kind: 'missing_from_rebuilt' }),
      ]),
    );
    expect(report.differences).toHaveLength(3);
    expect(dump()).toEqual(damaged);
    expect(stagedTables()).toEqual([]);
  });
});
