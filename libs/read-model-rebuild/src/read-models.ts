import { accountsProjection } from '@campaign-ops/accounts';
import { connectionsProjection } from '@campaign-ops/connections';
import { creditLedgersProjection, dispatchesProjection } from '@campaign-ops/dispatching';
import { Projection } from '@campaign-ops/event-sourcing';
import { webhookEndpointsProjection } from '@campaign-ops/webhook-delivery';

/**
 * Every read model a rebuild can make from the event store alone: each defined once, by the lib
 * that owns it and keeps it live (see Projection), and replayed here as it is.
 */
export const READ_MODELS: readonly Projection[] = [
  accountsProjection,
  dispatchesProjection,
  creditLedgersProjection,
  connectionsProjection,
  webhookEndpointsProjection,
];

/**
 * What the read store holds that events do not give, so that no rebuild can make it: it is
 * operational state, kept by the services as they work (and `ops rebuild` leaves it alone).
 */
export const OPERATIONAL_COLLECTIONS: ReadonlyArray<{ name: string; what: string }> = [
  { name: 'webhook_deliveries', what: 'deliveries and their attempts: each made when an event was fanned out, then sent and retried' },
  { name: 'partner_events', what: 'the Events API window (30 days), written as partner events pass on the bus' },
  { name: 'webhook_endpoint_health', what: "endpoints' recent failures, which decide when one is disabled" },
  { name: 'idempotency_keys', what: "the gateway's kept answers to Idempotency-Keys (24 h)" },
  { name: 'dispatch_idempotency_keys', what: "dispatch-service's Idempotency-Keys of launches (24 h)" },
  { name: 'dispatch_work', what: "the running count of dispatches the relay settled in hand: the overload rule's pace in every replica" },
  { name: 'connection_tokens', what: 'the token vault: sealed access and refresh tokens, never in an event' },
  { name: 'connection_oauth_states', what: 'OAuth state records, by hash, until their window ends' },
  { name: 'connection_channel_slots', what: 'leases on (account, mode, channel) slots' },
  { name: 'checkpoints', what: "each processor's position in the event store" },
];

export function readModelNamed(name: string): Projection {
  const found = READ_MODELS.find((model) => model.name === name);
  if (!found) throw new Error(`no read model named ${name}; rebuildable: ${READ_MODELS.map((model) => model.name).join(', ')}`);
  return found;
}
