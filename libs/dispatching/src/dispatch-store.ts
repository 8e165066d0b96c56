import { AggregateRepository, toDomainEvent } from '@campaign-ops/event-sourcing';
import { Inject, Injectable } from '@nestjs/common';
import { EVENT_STORE, EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
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
export type DispatchView = DispatchResource & { account_id: string; mode: 'live' | 'test' } & Record<string, unknown>;

export const DISPATCH_VIEW_INDEXES = ['account_id', 'mode', 'status', 'channel'];

/** Where dispatches are written (their streams) and read (their view), for every use case. */
@Injectable()
export class DispatchStore {
  readonly repository: AggregateRepository<DispatchCommand, DispatchEvent, DispatchState>;
  readonly views: Collection<DispatchView>;

  constructor(
    @Inject(EVENT_STORE) readonly events: EventStore,
    @Inject(READ_STORE) readStore: ReadStore,
  ) {
    this.repository = new AggregateRepository(events, dispatchDecider, upcastDispatchEvent);
    this.views = readStore.collection<DispatchView>('dispatches', { indexes: DISPATCH_VIEW_INDEXES });
  }

  /** The dispatch as of `upToRevision` (inclusive), or its latest state. */
  async stateOf(streamId: string, upToRevision?: number): Promise<{ state: DispatchState; recorded: RecordedEvent[] }> {
    const recorded = await this.events.readStream(streamId, upToRevision === undefined ? {} : { maxCount: upToRevision + 1 });
    const history = recorded.map((r) => toDomainEvent(r, upcastDispatchEvent));
    return { state: fold(dispatchDecider, history), recorded };
  }

  /**
   * Brings the view up to the stream: the upsert is guarded by revision, so doing it inline after
   * a command (read-your-writes) and again from the projection changes nothing the second time.
   */
  /**
   * The projection's step: brings the view up to the stream unless it already holds `revision`
   * (the command that appended the event refreshed it inline), which costs one read instead of
   * reading and folding the stream.
   */
  async projectEvent(event: Pick<RecordedEvent, 'streamId' | 'revision'>): Promise<void> {
    const held = await this.views.revisionOf(event.streamId.slice(DISPATCH_STREAM_PREFIX.length));
    if (held !== null && held >= event.revision) return;
    await this.refreshView(event.streamId);
  }

  async refreshView(streamId: string): Promise<void> {
    const { state, recorded } = await this.stateOf(streamId);
    if (state.status === 'none') return;
    await this.views.upsert(toView(state), recorded[recorded.length - 1].revision);
  }
}

export const toView = (d: Dispatch): DispatchView => ({ ...toDispatchResource(d), account_id: d.accountId, mode: d.mode });

export function fromView(view: DispatchView): DispatchResource {
  const { account_id: _account, mode: _mode, ...resource } = view;
  return resource as DispatchResource;
}
