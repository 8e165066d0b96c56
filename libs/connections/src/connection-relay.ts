import { ConnectionEvent, toConnectionNotification, upcastConnectionEvent } from '@campaign-ops/connection-domain';
import { toDomainEvent } from '@campaign-ops/event-sourcing';
import { RecordedEvent } from '@campaign-ops/event-store';
import { publicEventId } from '@campaign-ops/ids';
import { PartnerEvent, PartnerEventSink } from '@campaign-ops/webhook-domain';
import { ConnectionStore } from './connection-store';

/**
 * What one stored connection event becomes: for the transitions partners see (`connection.active`,
 * `connection.reauth_required`), the partner event that webhook-delivery fans out to endpoints and
 * keeps for the Events API, handed to the sink (the bus, or the fan-out in the same process). Its
 * id derives from the event id, so a relay that repeats itself after a crash is de-duplicated.
 */
export async function relayConnectionEvent(store: ConnectionStore, partnerEvents: PartnerEventSink, event: RecordedEvent): Promise<void> {
  const { state } = await store.stateOf(event.streamId, event.revision);
  if (state.status === 'none') return;
  const notification = toConnectionNotification(toDomainEvent<ConnectionEvent>(event, upcastConnectionEvent), state);
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
