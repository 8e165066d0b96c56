import { Bus } from '@campaign-ops/bus';
import { RecordedEvent } from '@campaign-ops/event-store';
import { publicEventId } from '@campaign-ops/ids';
import { dispatchDecider, DispatchEvent, DispatchState, toNotification, upcastDispatchEvent } from '@campaign-ops/dispatch-domain';
import { PartnerEvent, PartnerEventSink } from '@campaign-ops/webhook-domain';
import { toDomainEvent } from '@campaign-ops/event-sourcing';
import { DispatchStore } from './dispatch-store';

/** A stored event as it travels on the bus. */
export type RelayedEvent = Omit<RecordedEvent, 'position'>;

export const dispatchEventSubject = (type: string) => `evt.dispatch.${type}`;
export const DISPATCH_EVENT_SUBJECTS = 'evt.dispatch.>';

/** The dispatch events that set work going (the executor's): the only ones the bus carries as such. */
export const WORK_EVENT_TYPES: ReadonlySet<string> = new Set(['DispatchAccepted', 'DispatchRetried']);

/**
 * What one stored dispatch event becomes: on the bus, the event itself when it sets work going
 * (for the executor, the only consumer of dispatch events) and, for a transition partners see, the
 * partner event, handed to the sink (the bus, or the fan-out in the same process). Both carry ids
 * derived from the event id, so a relay that repeats itself after a crash is de-duplicated.
 */
export async function relayDispatchEvent(
  store: DispatchStore,
  bus: Bus,
  partnerEvents: PartnerEventSink,
  event: RecordedEvent,
  states: RelayedStates = new RelayedStates(),
): Promise<void> {
  if (WORK_EVENT_TYPES.has(event.type)) {
    const { position: _position, ...relayed } = event;
    await bus.publish<RelayedEvent>(dispatchEventSubject(event.type), relayed, { msgId: event.id });
  }

  const domainEvent = toDomainEvent<DispatchEvent>(event, upcastDispatchEvent);
  const state = await states.after(store, event, domainEvent);
  if (state.status === 'none') return;
  const notification = toNotification(domainEvent, state);
  if (!notification) return;
  const partnerEvent: PartnerEvent = {
    id: publicEventId(event.id),
    event: notification.event,
    timestamp: event.occurredAt,
    data: notification.data,
    accountId: state.accountId,
    mode: state.mode,
  };
  await partnerEvents.accept(partnerEvent, `partner-${event.id}`);
}

/** Streams whose last relayed state is kept: about a minute of launches at full load. */
const KEPT_STATES = 10_000;

/**
 * The state of each dispatch as of the last event relayed, carried forward: the next event of the
 * stream is folded onto it instead of the stream being read again up to it. A stream not held (the
 * first event after a start but a stream's first, one evicted, or events relayed out of order) is
 * read as before.
 */
export class RelayedStates {
  private readonly held = new Map<string, { revision: number; state: DispatchState }>();

  async after(store: DispatchStore, event: RecordedEvent, domainEvent: DispatchEvent): Promise<DispatchState> {
    const before = event.revision === 0 ? { revision: -1, state: dispatchDecider.initialState } : this.held.get(event.streamId);
    const state =
      before !== undefined && before.revision === event.revision - 1
        ? dispatchDecider.evolve(before.state, domainEvent)
        : (await store.stateOf(event.streamId, event.revision)).state;
    this.held.delete(event.streamId);
    this.held.set(event.streamId, { revision: event.revision, state });
    // The oldest first (a Map keeps insertion order, and a stream is moved to the end at each event).
    if (this.held.size > KEPT_STATES) this.held.delete(this.held.keys().next().value!);
    return state;
  }
}
