import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { loadConfig } from '@campaign-ops/service-runtime';
import { BackupUsageError, runBackup, runRestore } from './backup-commands';
import { BACKUP_MANIFEST, BackupDamaged, BackupManifest, backupStores, BackupRefused, restoreStores } from './store-backup';

const KEYS = JSON.stringify({ WEBHOOK_SECRET_KEY: 'ab'.repeat(32) });

describe('backup and restore of the embedded stores', () => {
  let dir: string;
  let dataDir: string;
  let store: SqliteEventStore;

  const accepted = (n: number) => ({ id: ulidToUuid(ulid()), type: 'DispatchAccepted', data: { n }, metadata: { version: 1 } });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'store-backup-'));
    dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'generated-keys.json'), KEYS, { mode: 0o600 });
    store = SqliteEventStore.open(join(dataDir, 'events.sqlite'));
    for (let n = 0; n < 3; n++) await store.append(`dispatch-dsp_${n}`, [accepted(n)], { expectedRevision: 'no_stream' });
    const readStore = SqliteReadStore.open(join(dataDir, 'read-models.sqlite'));
    await readStore.close();
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const manifestOf = (backup: string): BackupManifest => JSON.parse(readFileSync(join(backup, BACKUP_MANIFEST), 'utf8'));

  it('copies the stores and keys of a store in use, with a manifest of their sizes, hashes and the head, and restores them', async () => {
    const backup = join(dir, 'backup');
    const manifest = await backupStores(dataDir, backup);
    // Written while the store is open, and appended to after: the copy is the store as it was.
    await store.append('dispatch-dsp_late', [accepted(9)], { expectedRevision: 'no_stream' });

    expect(manifest.event_store_head).toBe('3');
    expect(manifest.files.map((file) => file.name)).toEqual(['generated-keys.json', 'read-models.sqlite', 'events.sqlite']);
    expect(manifestOf(backup)).toEqual(manifest);
    expect(readdirSync(backup).sort()).toEqual([BACKUP_MANIFEST, 'events.sqlite', 'generated-keys.json', 'read-models.sqlite']);
    for (const file of manifest.files) expect(statSync(join(backup, file.name)).size).toBe(file.bytes);
    expect(statSync(join(backup, 'generated-keys.json')).mode & 0o777).toBe(0o600);

    const restoredDir = join(dir, 'restored');
    chmodSync(join(backup, 'generated-keys.json'), 0o644);
    expect(restoreStores(backup, restoredDir)).toEqual(manifest);
    expect(readFileSync(join(restoredDir, 'generated-keys.json'), 'utf8')).toBe(KEYS);
    expect(statSync(join(restoredDir, 'generated-keys.json')).mode & 0o777).toBe(0o600);
    const restored = SqliteEventStore.open(join(restoredDir, 'events.sqlite'));
    try {
      expect(await restored.lastPosition()).toBe('3');
      expect((await restored.readAll({ maxCount: 10 })).map((event) => event.streamId)).toEqual(['dispatch-dsp_0', 'dispatch-dsp_1', 'dispatch-dsp_2']);
    } finally {
      await restored.close();
    }
  });

  it('copies a database that another connection writes to all along whole: every row up to the last one copied, none half-written', async () => {
    const file = join(dataDir, 'read-models.sqlite');
    const db = new Database(file);
    db.exec('CREATE TABLE load (n INTEGER PRIMARY KEY, v TEXT)');
    const insert = db.prepare('INSERT INTO load (v) VALUES (?)');
    db.transaction(() => {
      for (let n = 0; n < 20000; n++) insert.run('x'.repeat(1000));
    })();
    db.close();
    // Another thread, with its own connection, as the running service is: a write every moment.
    const writer = new Worker(
      `const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
      const { parentPort, workerData } = require('node:worker_threads');
      const db = new Database(workerData, { timeout: 5000 });
      const insert = db.prepare('INSERT INTO load (v) VALUES (?)');
      let stop = false;
      parentPort.on('message', () => (stop = true));
      let first = true;
      (function write() {
        if (stop) { db.close(); return parentPort.postMessage('stopped'); }
        insert.run('y'.repeat(1000));
        if (first) parentPort.postMessage('writing');
        first = false;
        setImmediate(write);
      })();`,
      { eval: true, workerData: file },
    );
    try {
      // The backup starts once the writer has written (a loaded machine may take a while to start a thread).
      await new Promise((resolve) => writer.once('message', resolve));
      const manifest = await Promise.race([
        backupStores(dataDir, join(dir, 'backup')),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the backup did not finish while the writes went on')), 10_000)),
      ]);
      expect(manifest.files.map((f) => f.name)).toContain('read-models.sqlite');
    } finally {
      const stopped = new Promise((resolve) => writer.once('message', resolve));
      writer.postMessage('stop');
      await stopped;
      await writer.terminate();
    }
    const copy = new Database(join(dir, 'backup', 'read-models.sqlite'), { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      const { rows, last } = copy.prepare('SELECT count(*) AS rows, max(n) AS last FROM load').get() as { rows: number; last: number };
      // No gap: every row up to the last one copied is there.
      expect(rows).toBe(last);
      expect(rows).toBeGreaterThan(20000);
    } finally {
      copy.close();
    }
  }, 20_000);

  it('refuses a DATA_DIR without an event store, and an --out that is not empty', async () => {
    await expect(backupStores(join(dir, 'nothing'), join(dir, 'b1'))).rejects.toThrow(
      new BackupRefused(`DATA_DIR ${join(dir, 'nothing')} holds no event store (events.sqlite): nothing to back up`),
    );
    mkdirSync(join(dir, 'used'));
    writeFileSync(join(dir, 'used', 'notes.txt'), 'kept');
    await expect(backupStores(dataDir, join(dir, 'used'))).rejects.toThrow(BackupRefused);
    expect(readdirSync(join(dir, 'used'))).toEqual(['notes.txt']);
    mkdirSync(join(dir, 'empty'));
    await expect(backupStores(dataDir, join(dir, 'empty'))).resolves.toMatchObject({ event_store_head: '3' });
  });

  describe('restore', () => {
    let backup: string;
    let target: string;

    beforeEach(async () => {
      backup = join(dir, 'backup');
      await backupStores(dataDir, backup);
      target = join(dir, 'target');
    });

    it('refuses a file changed in the backup, naming it, and copies nothing', () => {
      const file = join(backup, 'events.sqlite');
      const bytes = readFileSync(file);
      bytes[bytes.length - 1] ^= 0xff;
      writeFileSync(file, bytes);
      expect(() => restoreStores(backup, target)).toThrow(BackupDamaged);
      expect(() => restoreStores(backup, target)).toThrow(/^events\.sqlite: SHA-256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}$/);
      expect(existsSync(target)).toBe(false);
    });

    it('refuses a file of another size or a missing one, naming it', () => {
      writeFileSync(join(backup, 'generated-keys.json'), `${KEYS} `);
      expect(() => restoreStores(backup, target)).toThrow(`generated-keys.json: ${KEYS.length + 1} bytes, the manifest says ${KEYS.length}`);
      writeFileSync(join(backup, 'generated-keys.json'), KEYS);
      rmSync(join(backup, 'read-models.sqlite'));
      expect(() => restoreStores(backup, target)).toThrow(`read-models.sqlite is missing from ${backup}`);
      rmSync(join(backup, BACKUP_MANIFEST));
      expect(() => restoreStores(backup, target)).toThrow(`${backup} holds no ${BACKUP_MANIFEST}`);
    });

    it('refuses a manifest that names a file outside the stores', () => {
      const manifest = manifestOf(backup);
      for (const name of ['../elsewhere', 'notes.txt']) {
        writeFileSync(join(backup, name), '');
        const listed = [...manifest.files, { name, bytes: 0, sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }];
        writeFileSync(join(backup, BACKUP_MANIFEST), JSON.stringify({ ...manifest, files: listed }));
        expect(() => restoreStores(backup, target)).toThrow(
          `names ${name}, which is none of generated-keys.json, read-models.sqlite, bus.sqlite, events.sqlite`,
        );
      }
      expect(existsSync(target)).toBe(false);
    });

    it('refuses a DATA_DIR that holds a store unless forced, then replaces it and drops its stale -wal and -shm', () => {
      mkdirSync(target);
      writeFileSync(join(target, 'bus.sqlite'), 'another bus');
      writeFileSync(join(target, 'events.sqlite'), 'another store');
      writeFileSync(join(target, 'events.sqlite-wal'), 'another log');
      writeFileSync(join(target, 'events.sqlite-shm'), 'another index');
      expect(() => restoreStores(backup, target)).toThrow(
        new BackupRefused(`DATA_DIR ${target} holds bus.sqlite, events.sqlite already: restore into an empty one, or replace them with --force`),
      );
      expect(readFileSync(join(target, 'events.sqlite'), 'utf8')).toBe('another store');

      restoreStores(backup, target, { force: true });
      expect(readFileSync(join(target, 'events.sqlite'))).toEqual(readFileSync(join(backup, 'events.sqlite')));
      expect(existsSync(join(target, 'events.sqlite-wal'))).toBe(false);
      expect(existsSync(join(target, 'events.sqlite-shm'))).toBe(false);
      expect(readdirSync(target).filter((name) => name.endsWith('.partial'))).toEqual([]);
    });
  });

  it.each(['EVENTSTORE_URL=esdb://localhost:2113', 'MONGODB_URL=mongodb://localhost:27017', 'NATS_URL=nats://localhost:4222'])(
    'refuses to back up or restore with %s set, pointing at docs/operations.md',
    async (setting) => {
      const [name, value] = setting.split('=');
      const config = loadConfig('ops-cli', { DATA_DIR: dataDir, [name]: value });
      const refusal = `is for the embedded stores of DATA_DIR, and ${name} is set: back these up with their own tools: docs/operations.md`;
      await expect(runBackup(config, { out: join(dir, 'b') })).rejects.toThrow(new BackupUsageError(`backup ${refusal}`));
      await expect(runRestore(config, { from: join(dir, 'b') })).rejects.toThrow(new BackupUsageError(`restore ${refusal}`));
      expect(existsSync(join(dir, 'b'))).toBe(false);
    },
  );
});
