/**
 * A rebuild's writer thread (see RebuildWriter): on a connection of its own to the read store's
 * file, serializes each batch of documents and writes it to its stand-in table in one
 * transaction, with the revision guard every upsert has, and answers when it is committed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { upsertSql } from './upsert-sql';

const { file, busyTimeoutMs } = workerData as { file: string; busyTimeoutMs: number };
const db = new Database(file, { timeout: busyTimeoutMs });
db.pragma('synchronous = NORMAL');
const statements = new Map<string, Database.Statement<[string, number, string]>>();
const write = db.transaction((table: string, rows: Array<[string, number, unknown]>) => {
  let statement = statements.get(table);
  if (!statement) statements.set(table, (statement = db.prepare(upsertSql(table))));
  for (const [id, revision, doc] of rows) statement.run(id, revision, JSON.stringify(doc));
});

parentPort!.on('message', ({ id, table, rows }: { id: number; table: string; rows: Array<[string, number, unknown]> }) => {
  try {
    // IMMEDIATE: the write lock first, waiting its turn while a service writes the file. (Deferred
    // transactions of two connections writing one file at full speed failed at once with
    // "database is locked" in a trial of two replay threads each writing its own batches.)
    write.immediate(table, rows);
    parentPort!.postMessage({ id });
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
