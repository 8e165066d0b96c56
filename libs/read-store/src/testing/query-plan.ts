import Database from 'better-sqlite3';
import { compileFilter } from '../sqlite-filter';
import type { Filter } from '../read-store.port';

/**
 * How SQLite would run `find(where)` on a collection of the SQLite read store in `file` (its
 * EXPLAIN QUERY PLAN, one line): for specs that a read is served by the index meant for it, also
 * before the store's first `PRAGMA optimize` gives SQLite its statistics.
 */
export function sqliteQueryPlan(file: string, collection: string, where: Filter): string {
  const db = new Database(file, { readonly: true });
  try {
    const filter = compileFilter(where);
    const sql = `EXPLAIN QUERY PLAN SELECT doc FROM "coll_${collection}" WHERE ${filter.sql} ORDER BY id DESC LIMIT 2`;
    return (db.prepare(sql).all(...filter.params) as { detail: string }[]).map((row) => row.detail).join('; ');
  } finally {
    db.close();
  }
}
