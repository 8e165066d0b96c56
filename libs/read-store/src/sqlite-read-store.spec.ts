import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { GroupCommit } from '@campaign-ops/sqlite-wal';
import type { Doc } from './read-store.port';
import { SqliteReadStore } from './sqlite-read-store';
import { readStoreContract } from './testing/read-store.contract';

const dirs: string[] = [];
function tempFile(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'read-store-'));
  dirs.push(dir);
  return join(dir, name);
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

readStoreContract('sqlite :memory:', async () => SqliteReadStore.open(':memory:'));
readStoreContract('sqlite file', async () => SqliteReadStore.open(tempFile('contract.db')));

describe('SqliteReadStore', () => {
  const opened: SqliteReadStore[] = [];
  const open = (file: string) => {
    const store = SqliteReadStore.open(file);
    opened.push(store);
    return store;
  };

  afterEach(async () => {
    // close() is idempotent, so tests may close stores themselves.
    for (const store of opened.splice(0)) await store.close();
  });

  it('lets two instances on the same file see each other’s writes', async () => {
    const file = tempFile('shared.db');
    const a = open(file);
    const b = open(file);
    const inA = a.collection('items', { indexes: ['status'] });
    const inB = b.collection('items', { indexes: ['status'] });

    await inA.upsert({ id: 'doc_1', status: 'pending' }, 0);
    await expect(inB.get('doc_1')).resolves.toEqual({ id: 'doc_1', status: 'pending' });
    await expect(inB.claim({ status: 'pending' }, { status: 'claimed' })).resolves.toEqual({ id: 'doc_1', status: 'claimed' });
    await expect(inA.claim({ status: 'pending' }, { status: 'claimed' })).resolves.toBeNull();
    await expect(inA.upsert({ id: 'doc_1', status: 'stale' }, 0)).resolves.toBe(false);

    await b.checkpoints.set('projection', '17');
    await expect(a.checkpoints.get('projection')).resolves.toBe('17');
  });

  it('updates a document field by field: its fields keep their order, new ones come last, and a `__proto__` field stays data', async () => {
    const store = SqliteReadStore.open(':memory:');
    try {
      const items = store.collection<{ id: string } & Record<string, unknown>>('patched');
      await items.insert(JSON.parse('{"id":"a","b":1,"__proto__":{"polluted":true},"c":2}'));
      const updated = await items.update('a', { c: 3, d: 4, b: undefined });
      expect(Object.keys(updated!)).toEqual(['id', 'b', '__proto__', 'c', 'd']);
      expect(updated).toMatchObject({ b: 1, c: 3, d: 4 });
      await items.insert({ id: 'b', n: 1 });
      const patched = await items.update('b', JSON.parse('{"__proto__":{"other":1}}'));
      for (const doc of [patched, await items.get('b')]) {
        expect(Object.getPrototypeOf(doc)).toBe(Object.prototype);
        expect(Object.getOwnPropertyDescriptor(doc, '__proto__')?.value).toEqual({ other: 1 });
        expect(({} as Record<string, unknown>).other).toBeUndefined();
      }
    } finally {
      await store.close();
    }
  });

  describe('read-mostly collections', () => {
    /** The store's own connection: a change made through it, not through the collection, is one the collection cannot know of. */
    const connectionOf = (store: SqliteReadStore) => (store as unknown as { db: Database.Database }).db;

    it('answers a repeated read from memory, where a plain collection reads the table again', async () => {
      const store = open(tempFile('remembered.db'));
      const keys = store.collection('keys', { indexes: ['hash'], readMostly: true });
      const plain = store.collection('plain', { indexes: ['hash'] });
      for (const collection of [keys, plain]) {
        await collection.upsert({ id: 'key_1', hash: 'h1', revoked: false }, 0);
        await collection.find({ hash: 'h1' });
        await collection.get('key_1');
      }
      const behindTheirBacks = `UPDATE "coll_keys" SET doc = json_set(doc, '$.revoked', json('true')); UPDATE "coll_plain" SET doc = json_set(doc, '$.revoked', json('true'))`;
      connectionOf(store).exec(behindTheirBacks);

      await expect(keys.find({ hash: 'h1' })).resolves.toEqual({ items: [{ id: 'key_1', hash: 'h1', revoked: false }], hasMore: false });
      await expect(keys.get('key_1')).resolves.toEqual({ id: 'key_1', hash: 'h1', revoked: false });
      await expect(plain.find({ hash: 'h1' })).resolves.toEqual({ items: [{ id: 'key_1', hash: 'h1', revoked: true }], hasMore: false });
      await expect(plain.get('key_1')).resolves.toEqual({ id: 'key_1', hash: 'h1', revoked: true });
    });

    it("sees another connection's commit at its next read (an API key revoked by another process)", async () => {
      const file = tempFile('two-connections.db');
      const [reader, writer] = [open(file), open(file)];
      const keys = reader.collection('keys', { indexes: ['hash'], readMostly: true });
      await writer.collection('keys').upsert({ id: 'key_1', hash: 'h1', revoked: false }, 0);
      await expect(keys.find({ hash: 'h1' })).resolves.toEqual({ items: [{ id: 'key_1', hash: 'h1', revoked: false }], hasMore: false });
      await expect(keys.get('key_1')).resolves.toEqual({ id: 'key_1', hash: 'h1', revoked: false });

      await writer.collection('keys').upsert({ id: 'key_1', hash: 'h1', revoked: true }, 1);
      await expect(keys.find({ hash: 'h1' })).resolves.toEqual({ items: [{ id: 'key_1', hash: 'h1', revoked: true }], hasMore: false });
      await expect(keys.get('key_1')).resolves.toEqual({ id: 'key_1', hash: 'h1', revoked: true });
    });

    it("sees another connection's commits as of its first read in a turn of the event loop, and of the next turn after", async () => {
      const file = tempFile('one-turn.db');
      const [reader, writer] = [open(file), open(file)];
      const keys = reader.collection('keys', { readMostly: true });
      await writer.collection('keys').upsert({ id: 'key_1', revoked: false }, 0);
      const before = keys.get('key_1');
      // Another process commits within the same turn (a raw write: it commits at once).
      connectionOf(writer).prepare(`UPDATE "coll_keys" SET doc = '{"id":"key_1","revoked":true}'`).run();
      const sameTurn = keys.get('key_1');
      await expect(Promise.all([before, sameTurn])).resolves.toEqual([
        { id: 'key_1', revoked: false },
        { id: 'key_1', revoked: false },
      ]);
      await new Promise((resolve) => setImmediate(resolve));
      await expect(keys.get('key_1')).resolves.toEqual({ id: 'key_1', revoked: true });
    });
  });

  describe('revisionOf after this connection wrote', () => {
    it("answers its own upsert's revision, and the table's once another connection has committed", async () => {
      const file = tempFile('revisions.db');
      const [service, replica] = [open(file), open(file)];
      const views = service.collection('views');
      await views.upsert({ id: 'v1', n: 1 }, 3);
      await expect(views.revisionOf('v1')).resolves.toBe(3);

      await replica.collection('views').upsert({ id: 'v1', n: 2 }, 5);
      await new Promise((resolve) => setImmediate(resolve));
      await expect(views.revisionOf('v1')).resolves.toBe(5);
      // An upsert that changed nothing (the row is past it) leaves the table to answer.
      await expect(views.upsert({ id: 'v1', n: 3 }, 4)).resolves.toBe(false);
      await expect(views.revisionOf('v1')).resolves.toBe(5);
    });

    it('waits for an upsert of the id under way, whatever its outcome, instead of answering the table as it was', async () => {
      const views = open(tempFile('queued.db')).collection('views');
      const writing = views.upsert({ id: 'v1', n: 1 }, 3);
      await expect(views.revisionOf('v1')).resolves.toBe(3);
      await writing;
      // One the table refuses (a revision behind it) changes nothing, and is waited for as well.
      const behind = views.upsert({ id: 'v1', n: 2 }, 1);
      await expect(views.revisionOf('v1')).resolves.toBe(3);
      await expect(behind).resolves.toBe(false);
      // A failing one: the table's answer, once it has failed.
      const failing = views.upsert({ id: 'v2', bad: 1n } as never, 0);
      await expect(views.revisionOf('v2')).resolves.toBeNull();
      await expect(failing).rejects.toThrow();
    });

    it('knows a row deleted after its upsert is gone, both made in one turn', async () => {
      const views = open(tempFile('deleted.db')).collection('views');
      await Promise.all([views.upsert({ id: 'v1' }, 0), views.delete('v1')]);
      await expect(views.revisionOf('v1')).resolves.toBeNull();
    });

    it('answers the rebuilt table after a swap in this connection', async () => {
      const store = open(tempFile('swapped.db'));
      const views = store.collection('views');
      await views.upsert({ id: 'v1' }, 9);
      const rebuild = await store.beginRebuild([{ name: 'views', indexes: [] }]);
      await rebuild.upsertMany('views', [{ doc: { id: 'v1' }, revision: 4 }]);
      await rebuild.swap();
      await expect(views.revisionOf('v1')).resolves.toBe(4);
    });
  });

  describe('group commit', () => {
    it('commits the writes of one turn of the event loop together: far fewer WAL bytes than one commit each', async () => {
      const file = tempFile('group.db');
      const items = open(file).collection('items', { indexes: ['status', 'account_id', 'kind'] });
      const doc = (id: string) => ({ id, status: 'pending', account_id: 'acct_1', kind: 'k', body: 'x'.repeat(200) });
      await items.insert(doc('warm-up'));
      const walBytes = () => statSync(`${file}-wal`).size;
      const before = walBytes();
      for (let i = 0; i < 20; i++) await items.insert(doc(`apart_${i}`));
      const apart = walBytes() - before;
      await Promise.all(Array.from({ length: 20 }, (_, i) => items.insert(doc(`together_${i}`))));
      const together = walBytes() - before - apart;
      expect(together * 4).toBeLessThan(apart);
    });

    it('runs the writes of a group in the order they were made, and fails only the one that fails', async () => {
      const items = open(tempFile('order.db')).collection('items', { indexes: ['status'] });
      const outcomes = await Promise.allSettled([
        items.insert({ id: 'doc_1', status: 'pending' }),
        items.claim({ status: 'pending' }, { status: 'claimed' }),
        items.update('doc_1', { id: 'doc_2' }),
        items.claim({ status: 'pending' }, { status: 'claimed' }),
        items.upsert({ id: 'doc_1', status: 'projected' }, 1),
      ]);
      expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'rejected'))).toEqual([
        true,
        { id: 'doc_1', status: 'claimed' },
        'rejected',
        null,
        true,
      ]);
      await expect(items.get('doc_1')).resolves.toEqual({ id: 'doc_1', status: 'projected' });
    });

    it('commits writes made just before close', async () => {
      const file = tempFile('closing.db');
      const store = open(file);
      const written = store.collection('items').insert({ id: 'doc_1' });
      const checkpoint = store.checkpoints.set('projection', '5');
      await store.close();
      await expect(written).resolves.toBe(true);
      await checkpoint;
      const reopened = open(file);
      await expect(reopened.collection('items').get('doc_1')).resolves.toEqual({ id: 'doc_1' });
      await expect(reopened.checkpoints.get('projection')).resolves.toBe('5');
    });
  });

  it('keeps documents, revisions and checkpoints across a reopen', async () => {
    const file = tempFile('durable.db');
    const first = open(file);
    await first.collection('items').upsert({ id: 'doc_1', nested: { list: [1, 'two'] } }, 3);
    await first.checkpoints.set('projection', '99');
    await first.close();

    const second = open(file);
    const items = second.collection('items');
    await expect(items.get('doc_1')).resolves.toStrictEqual({ id: 'doc_1', nested: { list: [1, 'two'] } });
    await expect(items.revisionOf('doc_1')).resolves.toBe(3);
    await expect(second.checkpoints.get('projection')).resolves.toBe('99');
  });

  it('opens the file in WAL mode and stores documents without internal fields', async () => {
    const file = tempFile('layout.db');
    const store = open(file);
    const doc = { id: 'doc_1', status: 'pending', amount: 12.5 };
    await store.collection('items', { indexes: ['status'] }).upsert(doc, 4);

    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      const row = raw.prepare('SELECT id, revision, doc FROM coll_items').get() as { id: string; revision: number; doc: string };
      expect(row.revision).toBe(4);
      expect(JSON.parse(row.doc)).toStrictEqual(doc);

      // The filter and cursor shape the adapter generates must be served by the expression index.
      const plan = raw
        .prepare(
          `EXPLAIN QUERY PLAN SELECT doc FROM coll_items
           WHERE (json_extract(doc, '$.status') = ? AND json_type(doc, '$.status') = 'text') AND id < ?
           ORDER BY id DESC LIMIT ?`,
        )
        .all('pending', 'doc_9', 21) as { detail: string }[];
      expect(plan.map((step) => step.detail).join('\n')).toMatch(/USING INDEX "?ix:items:status"?/);
    } finally {
      raw.close();
    }
  });

  it('serves a claim by one field and due time from a compound index, without sorting', async () => {
    const file = tempFile('compound.db');
    const store = open(file);
    store.collection('jobs', { indexes: ['owner', 'due', ['owner', 'due']] });
    const raw = new Database(file, { readonly: true });
    try {
      const plan = raw
        .prepare(
          `EXPLAIN QUERY PLAN SELECT id, doc FROM coll_jobs
           WHERE (json_extract(doc, '$.owner') = ? AND json_type(doc, '$.owner') = 'text') AND (json_extract(doc, '$.due') <= ? AND json_type(doc, '$.due') = 'text')
           ORDER BY json_extract(doc, '$.due'), id LIMIT 1`,
        )
        .all('a', 'z') as { detail: string }[];
      const steps = plan.map((step) => step.detail).join('\n');
      expect(steps).toMatch(/USING INDEX "?ix:jobs:owner\+due"?/);
      expect(steps).not.toMatch(/TEMP B-TREE/);
    } finally {
      raw.close();
      await store.close();
    }
  });

  it('answers a claim that matches nothing without a write (no lock, no commit)', async () => {
    const store = open(':memory:');
    const items = store.collection<Doc & { status: string }>('claimable', { indexes: ['status'] });
    await items.insert({ id: 'a', status: 'done' });
    const writes = jest.spyOn(GroupCommit.prototype, 'write');
    try {
      await expect(items.claim({ status: 'pending' }, { status: 'taken' })).resolves.toBeNull();
      expect(writes).not.toHaveBeenCalled();
      await items.insert({ id: 'b', status: 'pending' });
      writes.mockClear();
      await expect(items.claim({ status: 'pending' }, { status: 'taken' })).resolves.toEqual({ id: 'b', status: 'taken' });
      expect(writes).toHaveBeenCalledTimes(1);
    } finally {
      writes.mockRestore();
    }
  });

  it('rejects collection and field names it cannot safely put in SQL', async () => {
    const store = open(':memory:');
    for (const name of ['Items', '1items', 'items-x', 'items; DROP TABLE checkpoints', '']) {
      expect(() => store.collection(name)).toThrow(/invalid collection name/);
    }
    expect(() => store.collection('items', { indexes: ["status') --"] })).toThrow(/invalid field name/);
    const items = store.collection('items');
    await expect(items.find({ "status' OR 1 --": 'x' })).rejects.toThrow(/invalid field name/);
    await expect(items.claim({}, {}, 'a.b')).rejects.toThrow(/invalid field name/);
    await expect(items.find({ status: { $ne: 'x' } as never })).rejects.toThrow(/unsupported filter operator/);
    await expect(items.find({ status: { constructor: 'x' } as never })).rejects.toThrow(/unsupported filter operator/);
    await expect(items.find({}, { order: 'ASC' as never })).rejects.toThrow(/order must be/);
  });

  it('refuses a patch that would change the id', async () => {
    const items = open(':memory:').collection('items');
    await items.insert({ id: 'doc_1' });
    await expect(items.update('doc_1', { id: 'doc_2' })).rejects.toThrow(/cannot change the id/);
    await expect(items.get('doc_1')).resolves.toEqual({ id: 'doc_1' });
  });

  it('hands every document to exactly one of several processes claiming from the same file', async () => {
    const file = tempFile('claims.db');
    const total = 600;
    const seeding = open(file);
    const items = seeding.collection<Doc>('jobs', { indexes: ['status'] });
    for (let i = 0; i < total; i++) await items.insert({ id: `job_${String(i).padStart(5, '0')}`, status: 'pending' });
    await seeding.close();

    const claimed = (await runClaimers(file, 4)).flat();

    expect(claimed).toHaveLength(total);
    expect(new Set(claimed).size).toBe(total);
    const check = open(file).collection('jobs', { indexes: ['status'] });
    await expect(check.count({ status: 'pending' })).resolves.toBe(0);
  });
});

const WORKSPACE_ROOT = resolve(__dirname, '../../..');

// A separate Node process that loads the adapter's TypeScript source, waits for "go" on stdin
// (so that all processes start claiming at the same moment), claims until nothing is left and
// prints the claimed ids as JSON.
const CLAIMER = `
const { SqliteReadStore } = require(${JSON.stringify(join(__dirname, 'sqlite-read-store.ts'))});
const store = SqliteReadStore.open(process.argv[1]);
const jobs = store.collection('jobs', { indexes: ['status'] });
process.stdout.write('ready\\n');
process.stdin.once('data', async () => {
  const ids = [];
  for (let doc; (doc = await jobs.claim({ status: 'pending' }, { status: 'claimed', by: process.pid }));) ids.push(doc.id);
  await store.close();
  process.stdout.write(JSON.stringify(ids) + '\\n');
  process.exit(0);
});
`;

type Claimer = { ready: Promise<void>; done: Promise<string[]>; start(): void };

/** Runs `count` claimer processes on `file`, released together once all are ready; returns what each claimed. */
async function runClaimers(file: string, count: number): Promise<string[][]> {
  const claimers = Array.from({ length: count }, () => startClaimer(file));
  // A claimer that fails to start reports it through `done`; the others must be released anyway.
  await Promise.allSettled(claimers.map((claimer) => claimer.ready));
  for (const claimer of claimers) claimer.start();
  return Promise.all(claimers.map((claimer) => claimer.done));
}

function startClaimer(file: string): Claimer {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', '-e', CLAIMER, file], { cwd: WORKSPACE_ROOT });
  let stdout = '';
  let stderr = '';
  const ready = new Promise<void>((resolveReady, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.startsWith('ready\n')) resolveReady();
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`claimer exited with ${code} before it was ready: ${stderr}`)));
  });
  const done = new Promise<string[]>((resolveDone, reject) => {
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    // 'close' rather than 'exit': it comes after stdout has been read to the end.
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`claimer exited with ${code}: ${stderr}`));
      try {
        resolveDone(JSON.parse(stdout.slice('ready\n'.length)) as string[]);
      } catch (error) {
        reject(error);
      }
    });
  });
  // Writing "go" to a process that already died must not crash the test run; `done` reports it.
  child.stdin.on('error', () => undefined);
  return { ready, done, start: () => child.stdin.end('go\n') };
}

describe('SqliteReadStore query plans', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'read-store-plans-'));
  });
  afterEach(() => {
    jest.useRealTimers();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refreshes SQLite's statistics every 30 s, so an account's documents are searched through its account index, not a boolean's", async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const file = join(dir, 'read-models.sqlite');
    const store = SqliteReadStore.open(file);
    const endpoints = store.collection('webhook_endpoints', { indexes: ['account_id', 'mode', 'enabled', 'deleted'] });
    for (let i = 0; i < 80; i++)
      await endpoints.insert({ id: `whk_${String(i).padStart(3, '0')}`, account_id: `acct_${i}`, mode: 'test', enabled: true, deleted: false });
    await endpoints.find({ account_id: 'acct_1', mode: 'test', enabled: true, deleted: false });
    const plan = () => {
      const db = new Database(file, { readonly: true });
      try {
        const sql =
          "SELECT id FROM coll_webhook_endpoints WHERE json_extract(doc, '$.account_id') = ? AND json_extract(doc, '$.mode') = ? AND json_extract(doc, '$.enabled') = ? AND json_extract(doc, '$.deleted') = ?";
        return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('acct_1', 'test', 1, 0) as { detail: string }[]).map((row) => row.detail).join('; ');
      } finally {
        db.close();
      }
    };
    // Without statistics SQLite takes one of the equal-looking indexes, here not the account's.
    expect(plan()).not.toContain('ix:webhook_endpoints:account_id');

    jest.advanceTimersByTime(30_000);

    expect(plan()).toContain('USING INDEX ix:webhook_endpoints:account_id');
    await store.close();
  });
});
