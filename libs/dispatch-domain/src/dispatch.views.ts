import { Dispatch } from './dispatch.decider';
import { DispatchEvent, Mode } from './dispatch.events';

export const environmentOf = (mode: Mode): 'live' | 'sandbox' => (mode === 'live' ? 'live' : 'sandbox');

/** The dispatch resource exactly as docs/api.md#dispatches-and-retries shows it. */
export interface DispatchResource {
  id: string;
  status: Dispatch['status'];
  channel: Dispatch['channel'];
  resource_type: 'campaign';
  action: 'create';
  environment: 'live' | 'sandbox';
  credits_charged: number;
  campaign: Dispatch['campaign'];
  connection_id: string | null;
  provider_resource_id: string | null;
  error: Dispatch['error'];
  attempts: number;
  idempotency_key: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  failed_at: string | null;
}

export const toDispatchResource = (d: Dispatch): DispatchResource => ({
  id: d.id,
  status: d.status,
  channel: d.channel,
  resource_type: d.resourceType,
  action: d.action,
  environment: environmentOf(d.mode),
  credits_charged: d.creditsCharged,
  campaign: d.campaign,
  connection_id: d.connectionId,
  provider_resource_id: d.providerResourceId,
  error: d.error,
  attempts: d.attempts,
  idempotency_key: d.idempotencyKey,
  created_at: d.createdAt,
  updated_at: d.updatedAt,
  completed_at: d.completedAt,
  failed_at: d.failedAt,
});

/** A webhook event as partners receive it (docs/api.md#webhooks-and-signatures, docs/api.md#webhooks-and-signatures), before it gets its id. */
export interface Notification {
  event: 'dispatch.accepted' | 'dispatch.completed' | 'dispatch.failed';
  data: Record<string, unknown>;
}

/**
 * The partner-facing event a domain event becomes, given the dispatch as it stands right after
 * it; `null` for events partners don't see (a transient attempt failure).
 */
export function toNotification(event: DispatchEvent, after: Dispatch): Notification | null {
  const base = {
    dispatch_id: after.id,
    channel: after.channel,
    resource_type: after.resourceType,
    action: after.action,
    environment: environmentOf(after.mode),
    credits_charged: after.creditsCharged,
  };
  switch (event.type) {
    case 'DispatchAccepted':
    case 'DispatchRetried':
      return { event: 'dispatch.accepted', data: { ...base, status: 'accepted' } };
    case 'DispatchCompleted':
      return { event: 'dispatch.completed', data: { ...base, status: 'completed', provider_resource_id: after.providerResourceId } };
    case 'DispatchFailed':
      return { event: 'dispatch.failed', data: { ...base, status: 'failed', error: after.error } };
    case 'DispatchAttemptStarted':
    case 'DispatchAttemptFailed':
      return null;
  }
}
