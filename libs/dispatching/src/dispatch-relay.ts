import { Bus } from '@campaign-ops/bus';
import { RecordedEvent } from '@campaign-ops/event-store';
import { publicEventId } from '@campaign-ops/ids';
import { DispatchEvent, toNotification, upcastDispatchEvent } from '@campaign-ops/dispatch-domain';
import { PartnerEvent, partnerEventSubject } from '@campaign-ops/webhook-domain';
import { toDomainEvent } from '@campaign-ops/event-sourcing';
import { DispatchStore } from './dispatch-store';

/** A stored event as it travels on the bus. */
export type RelayedEvent = Omit<RecordedEvent, 'position'>;

export const dispatchEventSubject = (type: string) => `evt.dispatch.${type}`;
export const DISPATCH_EVENT_SUBJECTS = 'evt.dispatch.>';

/** The dispatch events that set work going (the executor's): the only ones the bus carries as such. */
export const WORK_EVENT_TYPES: ReadonlySet<string> = new Set(['DispatchAccepted', 'DispatchRetried']);

/**
 * What one stored dispatch event becomes on the bus: the event itself when it sets work going
 * (for the executor, the only consumer of dispatch events) and, for a transition partners see, the
 * partner event (for webhooks). Both carry ids derived from the event id, so a relay that repeats
 * itself after a crash is de-duplicated.
 */
export async function relayDispatchEvent(store: DispatchStore, bus: Bus, event: RecordedEvent): Promise<void> {
  if (WORK_EVENT_TYPES.has(event.type)) {
    const { position: _position, ...relayed } = event;
    await bus.publish<RelayedEvent>(dispatchEventSubject(event.type), relayed, { msgId: event.id });
  }

  const { state } = await store.stateOf(event.streamId, event.revision);
  if (state.status === 'none') return;
  const notification = toNotification(toDomainEvent<DispatchEvent>(event, upcastDispatchEvent), state);
  if (!notification) return;
  const partnerEvent: PartnerEvent = {
    id: publicEventId(event.id),
    event: notification.event,
    timestamp: event.occurredAt,
    data: notification.data,
    accountId: state.accountId,
    mode: state.mode,
  };
  await bus.publish(partnerEventSubject(notification.event), partnerEvent, { msgId: `partner-${event.id}` });
}
