// The embedded event store's writer thread (see AppendThread in sqlite-appends.ts): its own
// connection to the file, and the appends of each batch committed in one transaction.
import { parentPort, workerData } from 'node:worker_threads';
import { nameThread } from '@campaign-ops/worker-start';
import { GroupCommit, openWal } from '@campaign-ops/sqlite-wal';
import { AppendAnswer, AppendBatch, appendFailure, SqliteAppends } from './sqlite-appends';

nameThread('event-append');

const { file } = workerData as { file: string };
const db = openWal(file);
// The source of truth: an acknowledged append must survive a power loss, not only a crash.
db.pragma('synchronous = FULL');
const appends = new SqliteAppends(db);
const group = new GroupCommit(db);

parentPort!.on('message', (message: AppendBatch | 'close') => {
  if (message === 'close') {
    group.flush();
    db.close();
    parentPort!.close();
    return;
  }
  const written = message.requests.map((request) => group.write(() => appends.append(request)));
  // Now, not at the end of this turn: the batch is the group.
  group.flush();
  void Promise.allSettled(written).then((settled) =>
    parentPort!.postMessage({
      id: message.id,
      outcomes: settled.map((s) => (s.status === 'fulfilled' ? { ok: true, outcome: s.value } : { ok: false, failure: appendFailure(s.reason) })),
    } satisfies AppendAnswer),
  );
});
