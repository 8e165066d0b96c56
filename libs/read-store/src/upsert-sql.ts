/**
 * The revision-guarded upsert of one document into a collection's table (quoted): one statement, so
 * the guard and the write are atomic without a transaction. A document written by `insert` has no
 * revision and counts as older than any projected one.
 */
export const upsertSql = (table: string) =>
  `INSERT INTO ${table} (id, revision, doc) VALUES (?, ?, ?)
   ON CONFLICT(id) DO UPDATE SET revision = excluded.revision, doc = excluded.doc
   WHERE revision IS NULL OR excluded.revision > revision`;
