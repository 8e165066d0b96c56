import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { GroupCommit } from './group-commit';

describe('GroupCommit', () => {
  let db: Database.Database;

  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  });
  afterEach(() => db.close());

  const insert = (group: GroupCommit, id: number, v: string | null) => group.write(() => db.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(id, v).changes);

  it('runs the writes of one turn in one transaction, in order, each resolving once committed', async () => {
    const group = new GroupCommit(db);
    const seen: number[] = [];
    const writes = [1, 2, 3].map((id) => group.write(() => (seen.push(id), db.inTransaction)));
    // Nothing has run yet: the group waits for the end of the turn.
    expect(seen).toEqual([]);
    await expect(Promise.all(writes)).resolves.toEqual([true, true, true]);
    expect(seen).toEqual([1, 2, 3]);
    expect(db.inTransaction).toBe(false);
  });

  it('fails only the write that fails, rolling back what it did, and commits the others', async () => {
    const group = new GroupCommit(db);
    const outcomes = await Promise.allSettled([
      insert(group, 1, 'a'),
      // Writes a row, then breaks a constraint: the row it wrote goes too.
      group.write(() => {
        db.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(2, 'b');
        return db.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(3, null);
      }),
      insert(group, 4, 'd'),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(db.prepare('SELECT id FROM t ORDER BY id').all()).toEqual([{ id: 1 }, { id: 4 }]);
  });

  it('answers each write with what it saw in the transaction that was committed, after a write of the group failed', async () => {
    const group = new GroupCommit(db);
    const countAfter = (id: number) => () => {
      db.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(id, 'x');
      return (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
    };
    const outcomes = await Promise.allSettled([group.write(countAfter(1)), insert(group, 2, null), group.write(countAfter(3))]);
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: 1 },
      { status: 'rejected', reason: expect.objectContaining({ code: 'SQLITE_CONSTRAINT_NOTNULL' }) },
      { status: 'fulfilled', value: 2 },
    ]);
    expect(db.prepare('SELECT id FROM t ORDER BY id').all()).toEqual([{ id: 1 }, { id: 3 }]);
  });

  it('fails a group of one failing write with its own error, writing nothing of it', async () => {
    const group = new GroupCommit(db);
    const failing = group.write(() => {
      db.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(1, 'a');
      throw new Error('refused');
    });
    await expect(failing).rejects.toThrow('refused');
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
    expect(db.inTransaction).toBe(false);
  });

  it('fails every write of the group when the transaction cannot begin (another connection holds the write lock)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
    const file = join(dir, 'wal.db');
    const first = new Database(file, { timeout: 0 });
    const other = new Database(file, { timeout: 0 });
    try {
      first.pragma('journal_mode = WAL');
      first.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
      other.exec('BEGIN IMMEDIATE');
      const group = new GroupCommit(first);
      const writes = [1, 2].map((id) => group.write(() => first.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(id, 'a')));
      const outcomes = await Promise.allSettled(writes);
      expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : o.status))).toEqual(['SQLITE_BUSY', 'SQLITE_BUSY']);
      other.exec('ROLLBACK');
    } finally {
      first.close();
      other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs no write of the group after one whose error ended the whole transaction, and commits none of them', async () => {
    const group = new GroupCommit(db);
    const outcomes = await Promise.allSettled([
      insert(group, 1, 'a'),
      insert(group, 2, null), // fails: the group runs again, a savepoint a write
      group.write(() => {
        // As SQLite does on a full disk or an I/O error: the whole transaction rolled back.
        if (db.inTransaction) db.exec('ROLLBACK');
        throw new Error('disk full');
      }),
      insert(group, 4, 'd'),
    ]);
    expect(outcomes.every((outcome) => outcome.status === 'rejected')).toBe(true);
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
    expect(db.inTransaction).toBe(false);
  });

  it('commits what is queued when flushed (before a close)', async () => {
    const group = new GroupCommit(db);
    const written = insert(group, 1, 'a');
    group.flush();
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1 });
    await expect(written).resolves.toBe(1);
  });

  it('journals the savepoints of a large group in memory, not in temporary files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
    const file = new Database(join(dir, 'wal.db'));
    try {
      file.pragma('journal_mode = WAL');
      file.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
      const group = new GroupCommit(file);
      const update = file.prepare('UPDATE t SET v = ? WHERE id % 10 = ?');
      file
        .prepare('WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) INSERT INTO t (id, v) SELECT i, ? FROM n')
        .run('x'.repeat(1000));
      const tempFiles = () =>
        readdirSync('/proc/self/fd').filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`).includes('etilqs');
          } catch {
            return false;
          }
        }).length;
      // Each write changes a row of every page, more than 64 KiB of pages its savepoint journals.
      const writes = Array.from({ length: 10 }, (_, i) => group.write(() => update.run(String(i).repeat(1000), i)));
      const seen = group.write(() => tempFiles());
      group.flush();
      await Promise.all(writes);
      await expect(seen).resolves.toBe(0);
    } finally {
      file.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
