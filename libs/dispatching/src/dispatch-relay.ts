import { Bus } from '@campaign-ops/bus';
import { RecordedEvent } from '@campaign-ops/event-store';
import { publicEventId } from '@campaign-ops/ids';
import { Dispatch, dispatchDecider, DispatchEvent, DispatchState, Notification, toNotification, upcastDispatchEvent } from '@campaign-ops/dispatch-domain';
import { PartnerEvent, PartnerEventSink } from '@campaign-ops/webhook-domain';
import { Known, toDomainEvent } from '@campaign-ops/event-sourcing';
import { DispatchStore } from './dispatch-store';

/** A stored event as it travels on the bus. */
export type RelayedEvent = Omit<RecordedEvent, 'position'>;

export const dispatchEventSubject = (type: string) => `evt.dispatch.${type}`;
export const DISPATCH_EVENT_SUBJECTS = 'evt.dispatch.>';

/** The dispatch events that set work going (the executor's): the only ones the bus carries as such. */
export const WORK_EVENT_TYPES: ReadonlySet<string> = new Set(['DispatchAccepted', 'DispatchRetried']);

/**
 * Where the relay hands the events that set work going, with the stream as of that event (its
 * state and revision, carried forward): the bus (`workOnBus`: the executor's durable
 * consumer, shared by every dispatch-service replica), or the executor in this process
 * (`DispatchWork`, standalone). Must be idempotent: after a crash the relay hands an event again.
 */
export interface DispatchWorkSink {
  accept(event: RelayedEvent, known: Known<DispatchState>): Promise<void>;
}

/** Work on the bus, as itself, de-duplicated by its event id. */
export const workOnBus = (bus: Bus): DispatchWorkSink => ({
  accept: (event) => bus.publish<RelayedEvent>(dispatchEventSubject(event.type), event, { msgId: event.id }),
});

/**
 * What one stored dispatch event becomes: for a transition partners see, the partner event,
 * handed to the sink (the bus, or the fan-out in the same process); when it sets work going, the
 * event itself, handed to the work sink (the bus, or the executor in the same process). Both carry
 * ids derived from the event id, so a relay that repeats itself after a crash is de-duplicated.
 */
export async function relayDispatchEvent(
  store: DispatchStore,
  work: DispatchWorkSink,
  partnerEvents: PartnerEventSink,
  event: RecordedEvent,
  states: RelayedStates = new RelayedStates(),
): Promise<void> {
  const domainEvent = toDomainEvent<DispatchEvent>(event, upcastDispatchEvent);
  const known = await states.after(store, event, domainEvent);
  const { state } = known;
  if (state.status !== 'none') {
    const notification = toNotification(domainEvent, state);
    if (notification) await partnerEvents.accept(toPartnerEvent(event, notification, state), `partner-${event.id}`);
  }
  if (WORK_EVENT_TYPES.has(event.type)) {
    const { position: _position, ...relayed } = event;
    await work.accept(relayed, known);
  }
}

function toPartnerEvent(event: RecordedEvent, notification: Notification, state: Dispatch): PartnerEvent {
  return {
    id: publicEventId(event.id),
    event: notification.event,
    timestamp: event.occurredAt,
    data: notification.data,
    accountId: state.accountId,
    mode: state.mode,
  };
}

/** Streams whose last relayed state is kept: about a minute of launches at full load. */
const KEPT_STATES = 10_000;

/**
 * Each dispatch as of the last event relayed (its state and revision), carried forward:
 * the next event of the stream is folded onto it instead of the stream being read again up to it.
 * A stream not held (the first event after a start but a stream's first, one evicted, or events
 * relayed out of order) is read as before.
 */
export class RelayedStates {
  private readonly held = new Map<string, Known<DispatchState>>();

  async after(store: DispatchStore, event: RecordedEvent, domainEvent: DispatchEvent): Promise<Known<DispatchState>> {
    const before: Known<DispatchState> | undefined =
      event.revision === 0 ? { state: dispatchDecider.initialState, revision: null } : this.held.get(event.streamId);
    const known =
      before !== undefined && (before.revision ?? -1) === event.revision - 1
        ? { state: dispatchDecider.evolve(before.state, domainEvent), revision: event.revision }
        : { state: (await store.stateOf(event.streamId, event.revision)).state, revision: event.revision };
    this.held.delete(event.streamId);
    this.held.set(event.streamId, known);
    // The oldest first (a Map keeps insertion order, and a stream is moved to the end at each event).
    if (this.held.size > KEPT_STATES) this.held.delete(this.held.keys().next().value!);
    return known;
  }
}
