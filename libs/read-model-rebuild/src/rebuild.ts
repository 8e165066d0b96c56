import { availableParallelism } from 'node:os';
import { EventStore, ReplayedEvent, ReplayReadOptions } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { Collection, Doc, ReadModelRebuild, ReadStore, StandInPort } from '@campaign-ops/read-store';
import { startWorkerBeside } from '@campaign-ops/worker-start';
import { Projection } from '@campaign-ops/event-sourcing';

/** Told as the replay goes: events applied, and how far through the store's positions (0..1). */
export type RebuildProgress = (applied: number, fraction: number) => void;

export interface RebuildOptions {
  onProgress?: RebuildProgress;
  /** Streams whose state is kept in memory between their events; past it the least recently seen are dropped (and read again if they come back). */
  maxStreamsInMemory?: number;
  /**
   * Whether models may be replayed in a thread of their own where the stores allow it (see
   * replayToHead): true wherever they can, false never; by default from THREADS_FROM_EVENTS on.
   */
  threads?: boolean;
  /** Only the streams of this share (see ReplayReadOptions): a replay thread's. */
  share?: ReplayReadOptions['share'];
}

export interface RebuildReport {
  read_models: string[];
  collections: Array<{ name: string; documents: number }>;
  events: number;
  /** The position the rebuilt models are exactly up to, when they were swapped in. */
  position: string | null;
  /** Checkpoints set to `position` with the swap (the processors that do nothing but project). */
  checkpoints: string[];
  seconds: number;
}

const PAGE = 5_000;
/** Streams whose documents are written at once (one upsertMany per collection). */
const FLUSH_EVERY = 5_000;
const DEFAULT_MAX_STREAMS = 200_000;
/** Catch-up rounds before the swap, while the store keeps growing; the last bit is read within it. */
const CATCH_UP_ROUNDS = 5;
const SMALL_ENOUGH = 1_000;
/**
 * A replay thread takes about half a second to start (it loads the models' code and opens its
 * connections): measured here, it pays from a few hundred thousand events on (a 100k rebuild was
 * 0.6 s slower with it, a 1M one 1 to 1.5 s faster). Positions stand for events: they count them.
 */
const THREADS_FROM_EVENTS = 400_000;
/**
 * Threads the models marked `replayInThread` are replayed in, each one share of their streams.
 * Two: the dispatches are about two thirds of the work, so with the other models replayed here
 * the work is in three parts of about a third each (on two cores, measured: one thread left this
 * one idle half the time and was the whole rebuild's critical path).
 */
const REPLAY_THREADS = 2;

interface Held {
  model: Projection;
  state: unknown;
  revision: number;
  /** When it was last put at the end of `held` (the order of use). */
  used: number;
}

/**
 * Replays the event store into fresh stand-ins of the models' collections. Events are read in
 * commit order, page by page; each stream's state is folded in memory, and the documents of the
 * streams touched are written in batches (revision-guarded, so a stream written twice keeps its
 * latest). Memory holds at most `maxStreamsInMemory` stream states: one dropped is read again
 * from its stream if a later event of it comes.
 */
export class Replay {
  private readonly held = new Map<string, Held>();
  private readonly touched = new Set<string>();
  private readonly prefixes: string[];
  private readonly maxStreams: number;
  /** Counts the entries put at the end of `held`. */
  private uses = 0;
  events = 0;
  position: string | null = null;

  /** A page of events: as a replay needs them, where the store can give only that (readAllForReplay). */
  private readonly readPage: (options: ReplayReadOptions) => Promise<ReplayedEvent[]>;

  constructor(
    private readonly eventStore: EventStore,
    readonly target: ReadModelRebuild,
    private readonly models: readonly Projection[],
    private readonly options: RebuildOptions = {},
  ) {
    this.prefixes = models.map((model) => model.streamPrefix);
    this.maxStreams = Math.max(1, options.maxStreamsInMemory ?? DEFAULT_MAX_STREAMS);
    if (options.share && !eventStore.readAllForReplay)
      throw new Error('a replay of one share of the streams needs a store that reads shares (readAllForReplay)');
    this.readPage = eventStore.readAllForReplay ? eventStore.readAllForReplay.bind(eventStore) : eventStore.readAll.bind(eventStore);
  }

  /** Applies every event after the current position up to `upTo` (inclusive), and writes what they changed. */
  async runTo(upTo: string | null, reportProgress = true): Promise<void> {
    if (upTo === null) return;
    const limit = BigInt(upTo);
    for (;;) {
      const page = await this.readPage({ fromPosition: this.position ?? undefined, maxCount: PAGE, streamPrefixes: this.prefixes, share: this.options.share });
      let reachedLimit = page.length < PAGE;
      // Positions only grow: when the page's last is within the limit, every one is.
      const allWithin = page.length === 0 || BigInt(page[page.length - 1].position) <= limit;
      for (const event of page) {
        if (!allWithin && BigInt(event.position) > limit) {
          reachedLimit = true;
          break;
        }
        if (!this.apply(event)) await this.applyAfterReading(event);
        this.position = event.position;
        // Documents are written (and states may be dropped) at most every FLUSH_EVERY streams, and before more are held than allowed.
        if (this.touched.size >= Math.min(FLUSH_EVERY, this.maxStreams)) await this.flush();
      }
      if (reportProgress && page.length) this.options.onProgress?.(this.events, fraction(this.position ?? '0', upTo));
      if (reachedLimit) break;
    }
    // Events of other streams may follow the last one of ours: the models are exactly up to `upTo`.
    if (this.position === null || BigInt(this.position) < limit) this.position = upTo;
    await this.flush();
  }

  /**
   * Folds the event into its stream's state held in memory; answers undefined, without doing
   * anything, when that state is not held up to the event before (applyAfterReading reads it).
   */
  private apply(event: ReplayedEvent): true | undefined {
    const held = this.held.get(event.streamId);
    if (held === undefined || held.revision !== event.revision - 1) return undefined;
    held.state = held.model.evolve(held.state, event);
    held.revision = event.revision;
    // Moved to the end of `held` (the order of use, for dropping the least recently used), but not
    // on every event: only once it has fallen back a quarter of what is held.
    if (this.uses - held.used > this.maxStreams / 4) this.use(event.streamId, held);
    this.touched.add(event.streamId);
    this.events++;
    return true;
  }

  /** A stream seen first here, or dropped from memory: its state from the stream itself, up to this event. */
  private async applyAfterReading(event: ReplayedEvent): Promise<void> {
    const model = this.models.find((candidate) => event.streamId.startsWith(candidate.streamPrefix))!;
    const before = event.revision === 0 ? [] : await this.eventStore.readStream(event.streamId, { maxCount: event.revision });
    const state = before.reduce((folded, e) => model.evolve(folded, e), model.initialState(event.streamId));
    this.use(event.streamId, { model, state: model.evolve(state, event), revision: event.revision, used: 0 });
    this.touched.add(event.streamId);
    this.events++;
  }

  private use(streamId: string, held: Held): void {
    held.used = ++this.uses;
    this.held.delete(streamId);
    this.held.set(streamId, held);
  }

  private async flush(): Promise<void> {
    const byCollection = new Map<string, Array<{ doc: Doc; revision: number }>>();
    for (const streamId of this.touched) {
      const { model, state, revision } = this.held.get(streamId)!;
      for (const { collection, doc } of model.documents(state, revision)) {
        let entries = byCollection.get(collection);
        if (!entries) byCollection.set(collection, (entries = []));
        entries.push({ doc, revision });
      }
    }
    this.touched.clear();
    for (const [collection, entries] of byCollection) await this.target.upsertMany(collection, entries);
    const max = this.maxStreams;
    if (this.held.size > max) {
      let excess = this.held.size - Math.floor(max * 0.75);
      for (const streamId of this.held.keys()) {
        if (excess-- <= 0) break;
        this.held.delete(streamId);
      }
    }
  }
}

function fraction(position: string, upTo: string): number {
  if (upTo === '0') return 1;
  return Math.min(1, Number((BigInt(position) * 10_000n) / BigInt(upTo)) / 10_000);
}

/** What a replay thread is given (see replay.worker.ts). */
export interface ReplayThreadData {
  eventStoreFile: string;
  /** Where it writes: a port to the rebuild's writer thread (transferred to it). */
  standIns: StandInPort;
  models: string[];
  upTo: string;
  maxStreamsInMemory?: number;
  share: NonNullable<RebuildOptions['share']>;
}

/** A replay running in a thread of its own: resolves with the events it applied once its documents are all written. */
function replayThread(data: ReplayThreadData, onProgress: RebuildProgress): { done: Promise<number>; stop(): Promise<void> } {
  const worker = startWorkerBeside(__filename, 'replay.worker', data, [data.standIns.port]);
  const done = new Promise<number>((resolve, reject) => {
    worker.on('message', (message: { progress?: { applied: number; fraction: number }; done?: { events: number }; error?: string }) => {
      if (message.progress) onProgress(message.progress.applied, message.progress.fraction);
      else if (message.done) resolve(message.done.events);
      else reject(new Error(`a replay thread failed: ${message.error}`));
    });
    worker.on('error', reject);
    worker.on('exit', (code) => reject(new Error(`a replay thread ended (exit code ${code}) before it was done`)));
  });
  const ended = done.finally(() => worker.terminate());
  // Met by the caller, or left after stop; never unhandled meanwhile.
  ended.catch(() => undefined);
  return { done: ended, stop: async () => void (await worker.terminate()) };
}

/**
 * The models replayed into the stand-ins up to `upTo`. On the embedded stores (files both), with
 * more than one core and a store large enough (RebuildOptions.threads), the models marked
 * `replayInThread` are replayed in REPLAY_THREADS threads, each the streams of one share (see
 * ReplayReadOptions), reading and writing on connections of its own, while this thread replays
 * the others: each replay with its own writer thread. The replay answered then holds every model,
 * at `upTo`, without states in memory (the catch-up reads again the few streams it meets).
 */
async function replayToHead(
  eventStore: EventStore,
  target: ReadModelRebuild,
  models: readonly Projection[],
  upTo: string | null,
  options: RebuildOptions,
): Promise<Replay> {
  const inThread = models.filter((model) => model.replayInThread);
  const here = models.filter((model) => !model.replayInThread);
  const threaded =
    upTo !== null &&
    (options.threads ?? BigInt(upTo) >= BigInt(THREADS_FROM_EVENTS)) &&
    inThread.length > 0 &&
    here.length > 0 &&
    target.standInPort !== undefined &&
    eventStore instanceof SqliteEventStore &&
    eventStore.file !== ':memory:' &&
    availableParallelism() >= 2;
  if (!threaded) {
    const replay = new Replay(eventStore, target, models, options);
    await replay.runTo(upTo);
    return replay;
  }
  // Progress: the events of all, and how far the one furthest behind is.
  const progress = new Map<string, [applied: number, fraction: number]>();
  const tell = (who: string) => (applied: number, fraction: number) => {
    progress.set(who, [applied, fraction]);
    const all = [...progress.values()];
    if (all.length === REPLAY_THREADS + 1)
      options.onProgress?.(
        all.reduce((sum, [n]) => sum + n, 0),
        Math.min(...all.map(([, f]) => f)),
      );
  };
  const threads = Array.from({ length: REPLAY_THREADS }, (_, index) =>
    replayThread(
      {
        eventStoreFile: eventStore.file,
        standIns: target.standInPort!(),
        models: inThread.map((model) => model.name),
        upTo,
        maxStreamsInMemory: options.maxStreamsInMemory,
        share: { index, of: REPLAY_THREADS },
      },
      tell(`thread ${index}`),
    ),
  );
  const local = new Replay(eventStore, target, here, { ...options, onProgress: tell('here') });
  let threadEvents: number[];
  try {
    await local.runTo(upTo);
    threadEvents = await Promise.all(threads.map((thread) => thread.done));
  } catch (error) {
    // Here or in one thread: the others are stopped (their connections closed) before the failure is told.
    await Promise.all(threads.map((thread) => thread.stop()));
    throw error;
  }
  const replay = new Replay(eventStore, target, models, options);
  replay.position = local.position;
  replay.events = local.events + threadEvents.reduce((sum, n) => sum + n, 0);
  return replay;
}

/** Replays the models' streams into stand-ins, catching up with a store that keeps growing, up to a last small step (for rebuildReadModels and checkReadModels). */
export async function replayAndCatchUp(eventStore: EventStore, readStore: ReadStore, models: readonly Projection[], options: RebuildOptions): Promise<Replay> {
  const target = await readStore.beginRebuild(models.flatMap((model) => model.collections));
  try {
    const replay = await replayToHead(eventStore, target, models, await eventStore.lastPosition(), options);
    for (let round = 0; round < CATCH_UP_ROUNDS; round++) {
      const head = await eventStore.lastPosition();
      if (head === null || replay.position === null || BigInt(head) - BigInt(replay.position) <= BigInt(SMALL_ENOUGH)) break;
      await replay.runTo(head, false);
    }
    return replay;
  } catch (error) {
    await target.discard();
    throw error;
  }
}

/**
 * Rebuilds the models blue/green while the services run: replays into stand-ins, catches up, and
 * swaps them in. On SQLite the last events are applied inside the swap's write transaction (the
 * services' projections wait for it, and whatever they wrote to the old tables is in the new
 * ones too, since they write only what the store already holds); the processors that only project
 * get the swap's position as checkpoint in that same transaction. On MongoDB, which cannot hold
 * writers off, the last events are applied just before the renames, and once more after them to
 * the swapped-in collections (revision-guarded, so a projection's own write is never undone).
 */
export async function rebuildReadModels(
  eventStore: EventStore,
  readStore: ReadStore,
  models: readonly Projection[],
  options: RebuildOptions = {},
): Promise<RebuildReport> {
  const started = Date.now();
  const replay = await replayAndCatchUp(eventStore, readStore, models, options);
  try {
    await replay.target.swap(async () => {
      await replay.runTo(await eventStore.lastPosition(), false);
      return replay.position === null ? {} : Object.fromEntries(models.filter((m) => !m.processor.reacts).map((m) => [m.processor.name, replay.position!]));
    });
  } catch (error) {
    await replay.target.discard();
    throw error;
  }
  const collections: Array<{ name: string; documents: number }> = [];
  for (const model of models) {
    for (const { name } of model.collections) collections.push({ name, documents: await readStore.collection(name).count({}) });
  }
  await catchUpLive(eventStore, readStore, models, replay);
  options.onProgress?.(replay.events, 1);
  return {
    read_models: models.map((model) => model.name),
    collections,
    events: replay.events,
    position: replay.position,
    checkpoints: replay.position === null ? [] : models.filter((m) => !m.processor.reacts).map((m) => m.processor.name),
    seconds: (Date.now() - started) / 1000,
  };
}

/** After the swap: what the store got meanwhile, into the now live collections (harmless on SQLite, needed on MongoDB). */
async function catchUpLive(eventStore: EventStore, readStore: ReadStore, models: readonly Projection[], replay: Replay): Promise<void> {
  const head = await eventStore.lastPosition();
  if (head === null || replay.position === null || BigInt(head) <= BigInt(replay.position)) return;
  const live: ReadModelRebuild = {
    collection: <T extends Doc>(name: string) => readStore.collection<T>(name),
    upsertMany: async (name, entries) => {
      const collection: Collection<Doc> = readStore.collection(name);
      for (const { doc, revision } of entries) await collection.upsert(doc, revision);
    },
    drain: async () => undefined,
    swap: async () => undefined,
    discard: async () => undefined,
  };
  const after = new Replay(eventStore, live, models);
  after.position = replay.position;
  await after.runTo(head, false);
}
