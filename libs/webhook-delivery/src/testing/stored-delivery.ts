import { newId } from '@campaign-ops/ids';
import { Delivery, pendingDelivery } from '@campaign-ops/webhook-domain';
import { EndpointView } from '../endpoint-store';

/** An endpoint's view as the store keeps it, pointing at `url`, of a new account (for worker specs). */
export function endpointViewAt(url: string, sealedSecret: string): EndpointView {
  const now = new Date().toISOString();
  return {
    id: newId('whk'),
    account_id: newId('acct'),
    mode: 'test',
    url,
    events: ['dispatch.completed'],
    enabled: true,
    disabled_reason: null,
    deleted: false,
    sealed_secret: sealedSecret,
    created_at: now,
    updated_at: now,
  };
}

/** A due delivery of a new `dispatch.completed` event to this endpoint, as fan-out stores it. */
export function dueDeliveryOf(view: Pick<EndpointView, 'id' | 'account_id'>): Delivery {
  const now = new Date().toISOString();
  const eventId = newId('evt');
  const body = JSON.stringify({ id: eventId, event: 'dispatch.completed', timestamp: now, data: { dispatch_id: newId('dsp') } });
  return pendingDelivery(
    { id: newId('dlv'), endpoint_id: view.id, account_id: view.account_id, mode: 'test', event_id: eventId, event: 'dispatch.completed', body },
    now,
  );
}
