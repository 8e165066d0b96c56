import { EventStore } from '@campaign-ops/event-store';
import { Projection } from '@campaign-ops/event-sourcing';
import { Collection, Doc, ReadStore } from '@campaign-ops/read-store';
import { RebuildOptions, replayAndCatchUp } from './rebuild';

export interface CollectionDifference {
  collection: string;
  id: string;
  kind: 'missing_from_live' | 'missing_from_rebuilt' | 'differs';
  live?: Doc;
  rebuilt?: Doc;
}

export interface CheckReport {
  read_models: string[];
  events: number;
  position: string | null;
  collections: Array<{ name: string; live: number; rebuilt: number; differences: number }>;
  /** The first differences of each collection (at most `limit` each). */
  differences: CollectionDifference[];
}

/**
 * Rebuilds the models into stand-ins and compares them, document by document in id order, with
 * the live collections, byte for byte (their JSON text); then drops the stand-ins. A model being
 * written while it is compared may show the writes of the last moment as differences: run it
 * again to tell those from real ones.
 */
export async function checkReadModels(
  eventStore: EventStore,
  readStore: ReadStore,
  models: readonly Projection[],
  options: RebuildOptions & { limit?: number } = {},
): Promise<CheckReport> {
  const replay = await replayAndCatchUp(eventStore, readStore, models, options);
  const limit = options.limit ?? 20;
  try {
    await replay.runTo(await eventStore.lastPosition(), false);
    await replay.target.drain();
    const collections: CheckReport['collections'] = [];
    const differences: CollectionDifference[] = [];
    for (const model of models) {
      for (const { name } of model.collections) {
        const compared = await compareCollections(name, readStore.collection(name), replay.target.collection(name), limit);
        collections.push(compared.summary);
        differences.push(...compared.first);
      }
    }
    options.onProgress?.(replay.events, 1);
    return { read_models: models.map((model) => model.name), events: replay.events, position: replay.position, collections, differences };
  } finally {
    await replay.target.discard();
  }
}

/** Every document of a collection in id order, a page at a time. */
export async function* documentsOf(collection: Collection<Doc>): AsyncGenerator<Doc> {
  let startingAfter: string | undefined;
  for (;;) {
    const page = await collection.find({}, { order: 'asc', limit: 1000, startingAfter });
    yield* page.items;
    if (!page.hasMore) return;
    startingAfter = page.items[page.items.length - 1].id;
  }
}

async function compareCollections(name: string, live: Collection<Doc>, rebuilt: Collection<Doc>, limit: number) {
  const summary = { name, live: 0, rebuilt: 0, differences: 0 };
  const first: CollectionDifference[] = [];
  const note = (difference: CollectionDifference) => {
    summary.differences++;
    if (first.length < limit) first.push(difference);
  };
  const a = documentsOf(live);
  const b = documentsOf(rebuilt);
  let x = await a.next();
  let y = await b.next();
  while (!x.done || !y.done) {
    if (!y.done && (x.done || y.value.id < x.value.id)) {
      summary.rebuilt++;
      note({ collection: name, id: y.value.id, kind: 'missing_from_live', rebuilt: y.value });
      y = await b.next();
    } else if (!x.done && (y.done || x.value.id < y.value.id)) {
      summary.live++;
      note({ collection: name, id: x.value.id, kind: 'missing_from_rebuilt', live: x.value });
      x = await a.next();
    } else {
      summary.live++;
      summary.rebuilt++;
      if (JSON.stringify(x.value) !== JSON.stringify(y.value))
        note({ collection: name, id: x.value!.id, kind: 'differs', live: x.value as Doc, rebuilt: y.value as Doc });
      x = await a.next();
      y = await b.next();
    }
  }
  return { summary, first };
}
