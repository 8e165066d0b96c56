import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { openWal, PAGE_CACHE_KIB } from './open-wal';

/**
 * Another connection (in a thread, as another process would be) opens a new file and holds the
 * write lock of its rollback journal for `holdMs`, as a process converting the file to WAL does:
 * without the retry, openWal's switch fails at once with SQLITE_BUSY.
 */
async function holdWriteLock(file: string, holdMs: number): Promise<Worker> {
  const worker = new Worker(
    `
    const { parentPort, workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.file);
    db.exec('BEGIN IMMEDIATE');
    db.exec('CREATE TABLE held (x)');
    parentPort.postMessage('held');
    setTimeout(() => { db.exec('COMMIT'); db.pragma('journal_mode = WAL'); db.close(); parentPort.postMessage('released'); }, workerData.holdMs);
    `,
    { eval: true, workerData: { file, holdMs, module: require.resolve('better-sqlite3') } },
  );
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return worker;
}

describe('openWal', () => {
  let dir: string;
  let worker: Worker | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'open-wal-'));
  });

  afterEach(async () => {
    await worker?.terminate();
    worker = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('given a new file, when opened, then it is in WAL mode with the busy timeout set', () => {
    const db = openWal(join(dir, 'a.sqlite'), { busyTimeoutMs: 1_234 });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('busy_timeout', { simple: true })).toBe(1_234);
    } finally {
      db.close();
    }
  });

  it("given no cache size, when opened, then its page cache is bounded to PAGE_CACHE_KIB, not SQLite's 16 MiB", () => {
    const db = openWal(join(dir, 'c.sqlite'));
    const sized = openWal(join(dir, 'd.sqlite'), { cacheKib: 512 });
    try {
      expect(db.pragma('cache_size', { simple: true })).toBe(-PAGE_CACHE_KIB);
      expect(sized.pragma('cache_size', { simple: true })).toBe(-512);
    } finally {
      db.close();
      sized.close();
    }
  });

  it('given another connection converting the new file, when opened at the same time, then it waits for it instead of failing', async () => {
    const file = join(dir, 'b.sqlite');
    worker = await holdWriteLock(file, 300);
    const started = Date.now();
    const db = openWal(file, { busyTimeoutMs: 5_000 });
    try {
      expect(Date.now() - started).toBeGreaterThanOrEqual(200);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.prepare('SELECT count(*) AS n FROM held').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });

  it('given a lock held past the busy timeout, when opened, then SQLITE_BUSY is thrown after the timeout', async () => {
    const file = join(dir, 'c.sqlite');
    worker = await holdWriteLock(file, 5_000);
    const started = Date.now();
    let caught: unknown;
    try {
      openWal(file, { busyTimeoutMs: 250 }).close();
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  });

  it('given :memory:, when opened, then it stays in memory mode', () => {
    const db = openWal(':memory:');
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('memory');
    } finally {
      db.close();
    }
  });
});
