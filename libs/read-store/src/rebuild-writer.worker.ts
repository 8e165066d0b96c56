/**
 * A rebuild's writer thread (see StandInWriter): on a connection of its own to the read store's
 * file, writes each batch of documents (their JSON text) to its stand-in table in one
 * transaction, with the revision guard every upsert has, and answers when it is committed. Batches
 * come from its owner and from the ports it is given (replays in other threads), one at a time.
 */
import { MessagePort, parentPort, workerData } from 'node:worker_threads';
import { nameThread } from '@campaign-ops/worker-start';
import Database from 'better-sqlite3';
import { upsertSql } from './upsert-sql';

nameThread('rebuild-writer');

const { file, busyTimeoutMs } = workerData as { file: string; busyTimeoutMs: number };
const db = new Database(file, { timeout: busyTimeoutMs });
db.pragma('synchronous = NORMAL');
const statements = new Map<string, Database.Statement<[string, number, string]>>();
const write = db.transaction((table: string, rows: Array<[string, number, string]>) => {
  let statement = statements.get(table);
  if (!statement) statements.set(table, (statement = db.prepare(upsertSql(table))));
  for (const [id, revision, text] of rows) statement.run(id, revision, text);
});

type Batch = { id: number; table: string; rows: Array<[string, number, string]> };

function answer(from: MessagePort) {
  return ({ id, table, rows }: Batch) => {
    try {
      // IMMEDIATE: the write lock first, waiting its turn while a service writes the file. (Deferred
      // transactions of two connections writing one file at full speed failed at once with
      // "database is locked" in a trial of two replay threads each writing its own batches.)
      write.immediate(table, rows);
      from.postMessage({ id });
    } catch (error) {
      from.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
    }
  };
}

const fromOwner = answer(parentPort! as unknown as MessagePort);
parentPort!.on('message', (message: Batch | { port: MessagePort }) => {
  if ('port' in message) message.port.on('message', answer(message.port));
  else fromOwner(message);
});
