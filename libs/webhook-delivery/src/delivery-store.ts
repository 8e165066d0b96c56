import type { Mode } from '@campaign-ops/account-domain';
import { Collection, ReadStore } from '@campaign-ops/read-store';
import { Delivery } from '@campaign-ops/webhook-domain';

/** A partner event as the Events API serves it, kept for 30 days. */
export interface StoredPartnerEvent {
  id: string;
  account_id: string;
  mode: Mode;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
  [key: string]: unknown;
}

export const deliveriesOf = (readStore: ReadStore): Collection<Delivery> =>
  readStore.collection<Delivery>('webhook_deliveries', {
    // The compound index serves each endpoint's own queue: its due deliveries, oldest first.
    indexes: ['status', 'next_attempt_at', 'endpoint_id', 'event_id', 'created_at', ['endpoint_id', 'next_attempt_at']],
  });

export const partnerEventsOf = (readStore: ReadStore): Collection<StoredPartnerEvent> =>
  readStore.collection<StoredPartnerEvent>('partner_events', { indexes: ['account_id', 'mode', 'type', 'created_at'] });
