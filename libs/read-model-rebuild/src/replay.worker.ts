/**
 * A replay in a thread of its own (see replayThread): the models named, one share of their streams, read from the embedded
 * event store's file on a connection of this thread, up to a position, written into the rebuild's
 * stand-ins through a port to the rebuild's writer thread. Tells its progress, then how many events it applied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { nameThread } from '@campaign-ops/worker-start';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { ReadModelRebuild } from '@campaign-ops/read-store';
import { StandInWriter } from '@campaign-ops/adapters/read-store';
import { readModelNamed } from './read-models';
import { Replay, ReplayThreadData } from './rebuild';

nameThread('model-replay');

const { eventStoreFile, standIns, models, upTo, maxStreamsInMemory, share } = workerData as ReplayThreadData;

async function run(): Promise<number> {
  const events = SqliteEventStore.open(eventStoreFile);
  const writer = StandInWriter.over(standIns);
  try {
    const elsewhere = () => {
      throw new Error("a replay thread only writes its documents; the rebuild's owner reads, swaps and discards");
    };
    const target: ReadModelRebuild = {
      upsertMany: (name, entries) => writer.upsertMany(name, entries),
      drain: () => writer.drain(),
      collection: elsewhere,
      swap: elsewhere,
      discard: elsewhere,
    };
    const replay = new Replay(events, target, models.map(readModelNamed), {
      maxStreamsInMemory,
      share,
      onProgress: (applied, fraction) => parentPort!.postMessage({ progress: { applied, fraction } }),
    });
    await replay.runTo(upTo);
    return replay.events;
  } finally {
    // Drains: once it resolves, every document of this thread is committed.
    await writer.close();
    await events.close();
  }
}

run().then(
  (events) => parentPort!.postMessage({ done: { events } }),
  (error: unknown) => parentPort!.postMessage({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
);
