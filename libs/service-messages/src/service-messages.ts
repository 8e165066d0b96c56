import type { CampaignSpec, Channel } from '@campaign-ops/channels';

/**
 * The requests the gateway sends to the services over the bus, and their replies. Replies are
 * `Outcome`s from @campaign-ops/api-errors: a value, or an API error as a value.
 */
export const SUBJECTS = {
  dispatchCreate: 'svc.dispatch.create',
  dispatchGet: 'svc.dispatch.get',
  dispatchList: 'svc.dispatch.list',
  dispatchRetry: 'svc.dispatch.retry',
  dispatchEvents: 'svc.dispatch.events',
  connectionResolve: 'svc.connection.resolve',
  webhookCreate: 'svc.webhook.create',
  webhookList: 'svc.webhook.list',
  webhookGet: 'svc.webhook.get',
  webhookUpdate: 'svc.webhook.update',
  webhookDelete: 'svc.webhook.delete',
  webhookRotateSecret: 'svc.webhook.rotate-secret',
  webhookDeliveries: 'svc.webhook.deliveries',
  webhookRedeliver: 'svc.webhook.redeliver',
  creditsGrant: 'svc.credits.grant',
  creditsBalances: 'svc.credits.balances',
  eventsList: 'svc.events.list',
  eventsGet: 'svc.events.get',
} as const;

/** Credits granted by account events (ids derived from the events, so a grant applies once). */
export interface GrantCreditsRequest {
  accountId: string;
  grants: Array<{ grantId: string; mode: Mode; amount: number }>;
}
export interface CreditBalancesRequest {
  accountId: string;
}
export type CreditBalances = Record<Mode, number>;

export interface ListEventsRequest {
  caller: Caller;
  query: ListQuery & { type?: string; createdAfter?: string };
}
export interface EventByIdRequest {
  caller: Caller;
  id: string;
}

export type Mode = 'live' | 'test';

/** Who is asking: every read and write is scoped to this account and mode. */
export interface Caller {
  accountId: string;
  mode: Mode;
  requestId: string;
}

export interface ListQuery {
  limit: number;
  startingAfter?: string;
}

export interface ListResult<T> {
  data: T[];
  hasMore: boolean;
}

export interface CreateDispatchRequest {
  caller: Caller;
  channel: Channel;
  campaign: CampaignSpec;
  idempotencyKey: string | null;
}
export interface DispatchByIdRequest {
  caller: Caller;
  id: string;
}
export interface ListDispatchesRequest {
  caller: Caller;
  query: ListQuery & { status?: string; channel?: string };
}

export interface ResolveConnectionRequest {
  accountId: string;
  mode: Mode;
  channel: Channel;
}
export interface ResolvedConnection {
  connection: { id: string; status: 'pending' | 'active' | 'reauth_required' | 'revoked' } | null;
}

export interface CreateWebhookRequest {
  caller: Caller;
  url: string;
  events: string[];
}
export interface WebhookByIdRequest {
  caller: Caller;
  id: string;
}
export interface UpdateWebhookRequest {
  caller: Caller;
  id: string;
  url?: string;
  events?: string[];
  enabled?: boolean;
}
export interface ListWebhooksRequest {
  caller: Caller;
  query: ListQuery;
}
export interface ListDeliveriesRequest {
  caller: Caller;
  id: string;
  query: ListQuery;
}
export interface RedeliverRequest {
  caller: Caller;
  id: string;
  deliveryId: string;
}
