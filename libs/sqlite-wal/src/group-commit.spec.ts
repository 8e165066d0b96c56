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
});
