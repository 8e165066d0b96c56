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
  /** The dry run of a launch (POST /v1/campaigns/validate): nothing is stored, charged or sent. */
  dispatchValidate: 'svc.dispatch.validate',
  connectionResolve: 'svc.connection.resolve',
  connectionCreate: 'svc.connection.create',
  connectionList: 'svc.connection.list',
  connectionGet: 'svc.connection.get',
  connectionDelete: 'svc.connection.delete',
  connectionReauthorize: 'svc.connection.reauthorize',
  connectionOAuthCallback: 'svc.connection.oauth-callback',
  /** dispatch-service asks for a fresh access token: the only way a token leaves connection-service. */
  connectionAccess: 'svc.connection.access',
  /** dispatch-service reports a provider's refusal of a token it was just given (or `[sandbox:reauth]`). */
  connectionReauthRequired: 'svc.connection.reauth-required',
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

export type { Mode } from '@campaign-ops/account-domain';
import type { Mode } from '@campaign-ops/account-domain';

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
export type ValidateCampaignRequest = Omit<CreateDispatchRequest, 'idempotencyKey'>;
/** The dry run's answer (docs/api.md#dispatches-and-retries): who checked the campaign, and their remarks. */
export interface CampaignValidation {
  valid: true;
  channel: Channel;
  /** `provider`: the network's own validate-only call; `rules`: the channel's rules this service knows; `sandbox`: the simulator's (test keys). */
  checked_by: 'provider' | 'rules' | 'sandbox';
  warnings: string[];
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

/** `POST /v1/connections` (docs/api.md#connections-and-oauth): token import when `credentials` is given, an OAuth round when `redirectUri` is. */
export interface CreateConnectionRequest {
  caller: Caller;
  channel: Channel;
  providerAccountId: string;
  credentials?: ConnectionCredentials;
  redirectUri?: string;
  /** With `redirectUri`: the account's registered OAuth redirect URIs, which it must match (the gateway reads them). */
  oauthRedirectUris?: string[];
  /** Test keys only: the simulated ad account's currency and time zone. */
  sandbox?: { currency?: string; timezone?: string };
}
export interface ConnectionCredentials {
  access_token: string;
  refresh_token?: string;
  expires_at?: string;
}
export interface ConnectionByIdRequest {
  caller: Caller;
  id: string;
}
export interface ListConnectionsRequest {
  caller: Caller;
  query: ListQuery & { channel?: string; status?: string };
}
export interface ReauthorizeConnectionRequest {
  caller: Caller;
  id: string;
  credentials?: ConnectionCredentials;
  redirectUri?: string;
  /** As for CreateConnectionRequest. */
  oauthRedirectUris?: string[];
}
/** The browser's return from the consent page: no caller, the `state` says whose it is. */
export interface OAuthCallbackRequest {
  requestId: string;
  code?: string;
  state?: string;
  /** The network's own refusal (`error=access_denied` on the callback). */
  error?: string;
  /** The callback's whole query (single values only), for networks that come back without `code` (X: `oauth_token`, `oauth_verifier`, `denied`). */
  query?: Record<string, string>;
}
/** Where the browser goes next: the partner's `redirect_uri` with `connection_id`/`status` or `error`. */
export interface OAuthCallbackResult {
  location: string;
}
/** The connection resource of docs/api.md#connections-and-oauth; `authorization_url` only on an answer that starts an OAuth round. */
export interface ConnectionResource {
  id: string;
  channel: Channel;
  status: 'pending' | 'active' | 'reauth_required' | 'revoked';
  provider_account_id: string;
  environment: 'live' | 'sandbox';
  scopes: string[];
  currency: string | null;
  timezone: string | null;
  expires_at: string | null;
  reauth_reason: string | null;
  created_at: string;
  updated_at: string;
  authorization_url?: string;
}

/**
 * A fresh access token for a live call: refreshed first when it expires within 10 minutes, or
 * always with `forceRefresh` (the network refused the one it was given). A refusal of the refresh
 * moves the connection to `reauth_required` and answers `connection_reauth_required`.
 */
export interface ConnectionAccessRequest {
  accountId: string;
  mode: Mode;
  connectionId: string;
  forceRefresh?: boolean;
  /**
   * With `forceRefresh`: the `tokenVersion` of the token the network refused. When the tokens on
   * file are newer (reauthorized or refreshed meanwhile), those are handed out and nothing is refreshed.
   */
  refusedVersion?: number;
  /**
   * The currency the launch's budget is in: an ad account that bills in another answers 422
   * `provider_validation_failed` (`provider_code: currency_mismatch`) before any token is read
   * or refreshed, since that launch fails whatever the token.
   */
  currency?: string;
  requestId?: string | null;
}
export interface ConnectionAccess {
  connectionId: string;
  channel: Channel;
  providerAccountId: string;
  accessToken: string;
  /** Which tokens these are (the vault's version): said back as `refusedVersion` when the network refuses them. */
  tokenVersion: number;
  /** The ad account as read at connect time: the budget currency must equal `currency`. */
  currency: string;
  timezone: string;
}
/** The answer to `connectionReauthRequired`: the connection as it now stands, or null when there was none to move. */
export type ConnectionReauthRequiredResult = ResolvedConnection;
export interface ConnectionReauthRequiredRequest {
  accountId: string;
  mode: Mode;
  /** The connection a dispatch used; null for a sandbox dispatch, which moves the channel's sandbox connection if any. */
  connectionId: string | null;
  channel: Channel;
  reason: string;
  /** The `tokenVersion` the network refused: a report about tokens older than those on file changes nothing. */
  refusedVersion?: number;
  requestId?: string | null;
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
