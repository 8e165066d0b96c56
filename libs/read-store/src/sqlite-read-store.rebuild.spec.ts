import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Doc } from './read-store.port';
import { SqliteReadStore } from './sqlite-read-store';

/** The SQLite side of a blue/green rebuild: another connection (a running service) and the indexes. */
describe('SqliteReadStore rebuild', () => {
  let dir: string;
  let file: string;
  const opened: SqliteReadStore[] = [];
  const open = () => {
    const store = SqliteReadStore.open(file);
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'read-store-rebuild-'));
    file = join(dir, 'read-models.sqlite');
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const indexesOf = (table: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name LIKE 'ix:%' ORDER BY name").all(table) as { name: string }[]
      ).map((row) => row.name);
    } finally {
      db.close();
    }
  };

  it('another connection (a running service) reads and writes the new table after the swap, through its indexes', async () => {
    const service = open().collection<Doc & { v: string }>('views', { indexes: ['v'] });
    await service.upsert({ id: 'a', v: 'old' }, 0);
    const ops = open();
    const rebuild = await ops.beginRebuild([{ name: 'views', indexes: ['v'] }]);
    await rebuild.upsertMany('views', [{ doc: { id: 'a', v: 'rebuilt' }, revision: 1 }]);

    await rebuild.swap();
    // (A write of another process during the swap waits for its lock: the e2e rebuild under load shows it.)
    await expect(service.upsert({ id: 'b', v: 'after' }, 0)).resolves.toBe(true);

    expect(await service.get('a')).toEqual({ id: 'a', v: 'rebuilt' });
    expect(await ops.collection('views').get('b')).toEqual({ id: 'b', v: 'after' });
    expect((await service.find({ v: 'rebuilt' })).items).toEqual([{ id: 'a', v: 'rebuilt' }]);
  });

  it('gives the new table the indexes, which a later start recognises instead of building them twice', async () => {
    const first = open();
    first.collection('views', { indexes: ['v', ['w', 'v']] });
    expect(indexesOf('coll_views')).toEqual(['ix:views:v', 'ix:views:w+v']);

    const rebuild = await first.beginRebuild([{ name: 'views', indexes: ['v', 'x'] }]);
    await rebuild.swap();
    const swapped = indexesOf('coll_views');
    expect(swapped).toHaveLength(3);
    expect(swapped.map((name) => name.replace(/:g[a-z0-9]+$/, ''))).toEqual(['ix:views:v', 'ix:views:w+v', 'ix:views:x']);

    await first.close();
    open().collection('views', { indexes: ['v', ['w', 'v'], 'x'] });
    expect(indexesOf('coll_views')).toEqual(swapped);
    // A second rebuild replaces them again, with its own generation.
    const again = await open().beginRebuild([{ name: 'views' }]);
    await again.swap();
    expect(indexesOf('coll_views').map((name) => name.replace(/:g[a-z0-9]+$/, ''))).toEqual(['ix:views:v', 'ix:views:w+v', 'ix:views:x']);
    expect(indexesOf('coll_views')).not.toEqual(swapped);
  });

  it('rolls everything back when the swap fails half way, and discard drops the stand-in', async () => {
    const store = open();
    await store.collection('views').upsert({ id: 'a' }, 0);
    const rebuild = await store.beginRebuild([{ name: 'views' }, { name: 'others' }]);
    await rebuild.upsertMany('views', [{ doc: { id: 'new' }, revision: 0 }]);
    await expect(
      rebuild.swap(async () => {
        // The renames succeed; the checkpoint write (a value SQLite cannot bind) then fails the whole transaction.
        return { checkpoint: {} as unknown as string };
      }),
    ).rejects.toThrow();
    expect(await store.collection('views').get('a')).toEqual({ id: 'a' });
    await rebuild.discard();
    const db = new Database(file, { readonly: true });
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%rebuild%'").all() as { name: string }[]).map(
      (row) => row.name,
    );
    db.close();
    expect(tables).toEqual([]);
  });

  it('writes the stand-ins in a thread of its own: the stand-in shows a batch once drained, already indexed, and the swap waits for every batch', async () => {
    const store = open();
    const rebuild = await store.beginRebuild([{ name: 'views', indexes: ['v'] }]);
    // Indexed from the start, not at the swap.
    const standIn = (db: Database.Database) =>
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'coll_views__rebuild_%'").get() as { name: string }).name;
    const db = new Database(file, { readonly: true });
    const table = standIn(db);
    db.close();
    expect(indexesOf(table)).toEqual([expect.stringMatching(/^ix:views:v:g[a-z0-9]+$/)]);

    const batches = Array.from({ length: 20 }, (_, b) =>
      Array.from({ length: 500 }, (_, i) => ({ doc: { id: `d${b * 500 + i}`, v: `v${i % 7}` }, revision: b })),
    );
    for (const batch of batches) await rebuild.upsertMany('views', batch);
    await rebuild.drain();
    expect(await rebuild.collection('views').count({})).toBe(10_000);
    expect(await rebuild.collection('views').count({ v: 'v3' })).toBe(batches.flat().filter(({ doc }) => doc.v === 'v3').length);

    await rebuild.upsertMany('views', [{ doc: { id: 'last', v: 'x' }, revision: 0 }]);
    await rebuild.swap();
    expect(await store.collection('views').get('last')).toEqual({ id: 'last', v: 'x' });
    expect(await store.collection('views').count({})).toBe(10_001);
  });

  it("reports the writer thread's failure: the next upsertMany or drain throws it, and discard still drops the stand-in", async () => {
    const store = open();
    const rebuild = await store.beginRebuild([{ name: 'views' }]);
    const db = new Database(file);
    const table = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'coll_views__rebuild_%'").get() as { name: string }).name;
    // The stand-in taken away behind the rebuild's back: the writer's insert fails.
    db.exec(`DROP TABLE "${table}"`);
    db.close();
    await rebuild.upsertMany('views', [{ doc: { id: 'a' }, revision: 0 }]);
    await expect(rebuild.drain()).rejects.toThrow(/writer thread failed: no such table/);
    await expect(rebuild.upsertMany('views', [{ doc: { id: 'b' }, revision: 0 }])).rejects.toThrow(/writer thread failed/);
    await expect(rebuild.swap()).rejects.toThrow(/writer thread failed/);
    await rebuild.discard();
    expect(indexesOf(table)).toEqual([]);
  });
});
