import type { Mode } from '@campaign-ops/account-domain';
import { AggregateRepository, Decided, Known, Loaded, LiveProjection, Projection, toDomainEvent } from '@campaign-ops/event-sourcing';
import { Inject, Injectable } from '@nestjs/common';
import { EVENT_STORE, EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { Collection, IndexSpec, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import {
  DISPATCH_STREAM_PREFIX,
  Dispatch,
  DispatchCommand,
  dispatchDecider,
  DispatchEvent,
  DispatchResource,
  DispatchState,
  toDispatchResource,
  upcastDispatchEvent,
} from '@campaign-ops/dispatch-domain';
import { fold } from '@campaign-ops/decider';

/** A dispatch as the `dispatches` read model keeps it: the resource plus its tenancy. */
export type DispatchView = DispatchResource & { account_id: string; mode: Mode } & Record<string, unknown>;

/**
 * What reads dispatches: a partner's list (always by account and mode, perhaps by status or
 * channel too, in id order) and the metrics' counts by status. Two indexes, each kept up on every
 * write of a dispatch: status and channel filters of a list are applied within the account's.
 */
export const DISPATCH_VIEW_INDEXES: IndexSpec[] = [['account_id', 'mode'], 'status'];

/** The `dispatches` read model: one document per dispatch, its resource plus its tenancy. */
export const dispatchesProjection: Projection<DispatchState> = {
  name: 'dispatches',
  streamPrefix: DISPATCH_STREAM_PREFIX,
  collections: [{ name: 'dispatches', indexes: DISPATCH_VIEW_INDEXES }],
  processor: { name: 'dispatch-views', reacts: false },
  // Most events and documents are dispatches' (a launch is 3 or 4 events, one of them the charge on
  // its ledger, and one dispatch document): on two cores a rebuild replays the others beside it.
  replayInThread: true,
  documentId: (streamId) => streamId.slice(DISPATCH_STREAM_PREFIX.length),
  initialState: () => dispatchDecider.initialState,
  evolve: (state, event) => dispatchDecider.evolve(state, toDomainEvent(event, upcastDispatchEvent)),
  documents: (state) => (state.status === 'none' ? [] : [{ collection: 'dispatches', doc: toView(state) }]),
};

/** Where dispatches are written (their streams) and read (their view), for every use case. */
@Injectable()
export class DispatchStore {
  readonly repository: AggregateRepository<DispatchCommand, DispatchEvent, DispatchState>;
  readonly live: LiveProjection<DispatchState>;
  readonly views: Collection<DispatchView>;

  constructor(
    @Inject(EVENT_STORE) readonly events: EventStore,
    @Inject(READ_STORE) readStore: ReadStore,
  ) {
    this.repository = new AggregateRepository(events, dispatchDecider, upcastDispatchEvent);
    this.live = new LiveProjection(dispatchesProjection, events, readStore);
    this.views = this.live.collection<DispatchView>('dispatches');
  }

  /**
   * The dispatch as of `upToRevision` (inclusive), or its latest state; `loaded` is the same for a
   * command decided on it (AggregateRepository.execute's `known`).
   */
  async stateOf(
    streamId: string,
    upToRevision?: number,
  ): Promise<{ state: DispatchState; recorded: RecordedEvent[]; loaded: Loaded<DispatchEvent, DispatchState> }> {
    const recorded = await this.events.readStream(streamId, upToRevision === undefined ? {} : { maxCount: upToRevision + 1 });
    const history = recorded.map((r) => toDomainEvent(r, upcastDispatchEvent));
    const state = fold(dispatchDecider, history);
    return { state, recorded, loaded: { history, state, revision: recorded.length ? recorded[recorded.length - 1].revision : null } };
  }

  /**
   * The dispatch as the stream's first event makes it, from that event alone (no read): what a
   * handed DispatchAccepted at revision 0 gives. Undefined for any later event, whose stream has
   * more before it.
   */
  stateAtFirstEvent(event: Pick<RecordedEvent, 'type' | 'data' | 'metadata' | 'revision'>): Known<DispatchState> | undefined {
    if (event.revision !== 0) return undefined;
    return { state: dispatchDecider.evolve(dispatchDecider.initialState, toDomainEvent(event, upcastDispatchEvent)), revision: 0 };
  }

  /** Brings the view up to the stream (read-your-writes after a command; the projection does it again, changing nothing). */
  async refreshView(streamId: string): Promise<void> {
    await this.live.refresh(streamId);
  }

  /**
   * The view of a command's outcome, from the state it decided (the stream's, as of the events it
   * appended): read-your-writes without reading and folding the stream again. Revision-guarded,
   * like every write of the view: a later state already shown stays.
   */
  async showDecided(decided: Decided<DispatchEvent, DispatchState>): Promise<void> {
    const last = decided.recorded[decided.recorded.length - 1];
    if (last === undefined || decided.state.status === 'none') return;
    await this.views.upsert(toView(decided.state), last.revision);
  }
}

export function toView(d: Dispatch): DispatchView {
  // Added to the resource made here rather than spread into a copy of it: a view per dispatch written.
  const view = toDispatchResource(d) as DispatchView;
  view.account_id = d.accountId;
  view.mode = d.mode;
  return view;
}

export function fromView(view: DispatchView): DispatchResource {
  const { account_id: _account, mode: _mode, ...resource } = view;
  return resource as DispatchResource;
}
