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
    // Every index is rewritten by each of a delivery's writes (stored, claimed, answered), so there
    // are only as many as the queries need: status + due time for the claims of any endpoint, the
    // endpoints with due work and the count by status; each endpoint's own queue (its due
    // deliveries, oldest first); an endpoint's list; created_at for the retention's purge.
    indexes: [['status', 'next_attempt_at'], ['endpoint_id', 'next_attempt_at'], 'endpoint_id', 'created_at'],
  });

export const partnerEventsOf = (readStore: ReadStore): Collection<StoredPartnerEvent> =>
  // An account's events in one mode, newest first (the Events API, its type filter read off those),
  // and created_at for the retention's purge.
  readStore.collection<StoredPartnerEvent>('partner_events', { indexes: [['account_id', 'mode'], 'created_at'] });
