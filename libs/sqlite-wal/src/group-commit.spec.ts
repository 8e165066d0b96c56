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
