import { EventStore, ReplayedEvent } from '@campaign-ops/event-store';
import { Collection, Doc, ReadStore, RebuildSpec } from '@campaign-ops/read-store';

/** A document a projection keeps, and the collection it goes in. */
export interface ProjectedDocument {
  collection: string;
  doc: Doc;
}

/**
 * A read model as one value: the streams it reads, the collections it writes (with their
 * indexes), and a fold of each stream (`initialState`, `evolve`) whose state gives the documents
 * it keeps (`documents`), each stored with the stream's last revision. The lib that owns the model
 * defines it; the live path (LiveProjection, kept up by projectionProcessor) and the rebuild
 * (read-model-rebuild) both run this same value, so a rebuild equals the live model by
 * construction.
 */
export interface Projection<State = unknown> {
  /** What `ops rebuild <name>` names. */
  name: string;
  streamPrefix: string;
  /** The first is the stream's own document (see documentId); the documents of the others are written before it. */
  collections: readonly RebuildSpec[];
  /**
   * The checkpointed processor that keeps it live (its checkpoint's name). `reacts`: the processor
   * also acts on the events beyond writing the model, so a rebuild leaves its checkpoint where it
   * is (that work must still see every event); otherwise a rebuild sets it to where it read up to.
   */
  processor: { name: string; reacts: boolean };
  /** Replayed in a thread of its own by a large embedded rebuild (see read-model-rebuild): for a model with most of the events. */
  replayInThread?: boolean;
  /** The id of the stream's document in the first collection. */
  documentId(streamId: string): string;
  initialState(streamId: string): State;
  evolve(state: State, event: ReplayedEvent): State;
  /** What the state keeps (nothing for a stream that is not one of the model's yet). */
  documents(state: State, revision: number): ProjectedDocument[];
  /**
   * Where the live path may start instead of the stream's first event: the state the stream's
   * stored document holds, and its revision (for models of long streams: credit ledgers). Null
   * when the document cannot be continued from.
   */
  resume?(document: Doc): { state: State; revision: number } | null;
}

/** The state of a stream folded from its events, from the projection's start or a resumed one. */
export function foldStream<State>(projection: Projection<State>, streamId: string, events: readonly ReplayedEvent[], from?: State): State {
  let state = from ?? projection.initialState(streamId);
  for (const event of events) state = projection.evolve(state, event);
  return state;
}

/**
 * A projection kept live: its collections opened with their indexes, and the step that brings a
 * stream's documents up to the stream (after a command, read-your-writes, and from the processor).
 * Every write is revision-guarded, so the two doing it in either order changes nothing the second
 * time.
 */
export class LiveProjection<State = unknown> {
  private readonly collections = new Map<string, Collection<Doc>>();
  private readonly first: Collection<Doc>;

  constructor(
    readonly projection: Projection<State>,
    private readonly events: EventStore,
    readStore: ReadStore,
  ) {
    for (const { name, indexes, readMostly } of projection.collections) this.collections.set(name, readStore.collection(name, { indexes, readMostly }));
    this.first = this.collection(projection.collections[0].name);
  }

  collection<T extends Doc>(name: string): Collection<T> {
    const found = this.collections.get(name);
    if (!found) throw new Error(`the ${this.projection.name} projection keeps no ${name} collection`);
    return found as Collection<T>;
  }

  /**
   * Brings the stream's documents up to the stream, unless its document already holds `atLeast`
   * (the command that appended the event refreshed it inline: one read instead of reading the
   * stream). Answers the state it wrote, or null when the stream has no event or was skipped.
   */
  async refresh(streamId: string, atLeast?: number): Promise<{ state: State; revision: number } | null> {
    const id = this.projection.documentId(streamId);
    if (atLeast !== undefined) {
      const held = await this.first.revisionOf(id);
      if (held !== null && held >= atLeast) return null;
    }
    const { state, revision, read } = await this.current(streamId);
    if (revision === null) return null;
    if (read) await this.write(this.projection.documents(state, revision), revision);
    return { state, revision };
  }

  /**
   * The stream's state as of its last event, without writing anything: from its document where
   * the projection resumes (one read of it: a state and its revision read apart could straddle a
   * write), then the events after it. `revision` is null for a stream without events; `read`
   * counts the events read from the stream.
   */
  async current(streamId: string): Promise<{ state: State; revision: number | null; read: number }> {
    const resumed = this.projection.resume ? await this.resumed(this.projection.documentId(streamId)) : null;
    const tail = await this.events.readStream(streamId, resumed ? { fromRevision: resumed.revision + 1 } : {});
    const revision = tail.length ? tail[tail.length - 1].revision : (resumed?.revision ?? null);
    return { state: foldStream(this.projection, streamId, tail, resumed?.state), revision, read: tail.length };
  }

  private async resumed(id: string): Promise<{ state: State; revision: number } | null> {
    const document = await this.first.get(id);
    return document && this.projection.resume!(document);
  }

  /** The stream's own document last: once it holds a revision, every other document of it does (see refresh's `atLeast`). */
  private async write(documents: ProjectedDocument[], revision: number): Promise<void> {
    const first = this.projection.collections[0].name;
    for (const { collection, doc } of documents) if (collection !== first) await this.collection(collection).upsert(doc, revision);
    for (const { collection, doc } of documents) if (collection === first) await this.first.upsert(doc, revision);
  }
}

/**
 * Given these domain events of one stream (in order), the documents the projection keeps: for
 * given/then specs of projections, without stores.
 */
export function documentsAfter<State>(
  projection: Projection<State>,
  streamId: string,
  events: ReadonlyArray<{ type: string; version: number; data: unknown }>,
): ProjectedDocument[] {
  const replayed: ReplayedEvent[] = events.map((event, revision) => ({
    streamId,
    revision,
    position: String(revision + 1),
    type: event.type,
    data: event.data as Record<string, unknown>,
    metadata: { version: event.version },
  }));
  return projection.documents(foldStream(projection, streamId, replayed), events.length - 1);
}
