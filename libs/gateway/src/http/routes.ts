import { CreateAccountDto, CreateCampaignDto, CreateKeyDto, CreateWebhookDto, GrantCreditsDto, ListDispatchesQueryDto, ListEventsQueryDto, UpdateWebhookDto } from '@campaign-ops/api-contract';
import { ErrorCode } from '@campaign-ops/api-errors';
import type { ResourceName } from '../openapi/resource.schemas';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';
/** `apiKey`: a partner's `mk_live_`/`mk_test_` key; `admin`: the ADMIN_TOKEN; `none`: public. */
export type RouteAuth = 'apiKey' | 'admin' | 'none';
export type RouteTag = 'Campaigns' | 'Dispatches' | 'Webhooks' | 'Events' | 'Account' | 'Admin' | 'Operations';

export interface Route {
  method: HttpMethod;
  /** `:name` marks a path parameter. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: RouteTag;
  auth: RouteAuth;
  /** What each `:name` of the path is. */
  params?: Record<string, string>;
  /** The body's DTO class (libs/api-contract), which validates it and describes it. */
  body?: Function;
  /** `data` of a 200 answer (a schema of openapi/resource.schemas.ts). */
  response: ResourceName;
  /** A list: `data` is an array and the envelope has `has_more`; paginated unless `paginated: false`; filtered by the query DTO's fields. */
  list?: { paginated?: boolean; query?: Function };
  /** Codes this route answers besides those every route of its kind does (openapi/route-errors.ts). */
  errors?: readonly ErrorCode[];
  /** Answered outside the envelope, as this media type. */
  raw?: 'application/json' | 'text/html' | 'text/plain';
  /** `false` for the probes, which the rate limit never counts (http/rate-limit.middleware.ts). */
  rateLimited?: false;
}

const dispatchId = { id: 'The dispatch id (`dsp_…`).' };
const endpointId = { id: 'The webhook endpoint id (`whk_…`).' };
const accountId = { id: 'The account id (`acct_…`).' };
const WEBHOOK_URL_ERRORS = ['url_invalid', 'url_not_https', 'url_forbidden_host', 'event_unknown'] as const;

/**
 * Every route the gateway serves: an unknown path answers 404 `route_not_found`, a known path
 * with another method 405 `method_not_allowed` (with `Allow`), and GET /openapi.json describes
 * exactly these. A controller route missing here fails openapi.spec.ts.
 */
export const ROUTES: ReadonlyArray<Route> = [
  {
    method: 'POST',
    path: '/v1/campaigns',
    operationId: 'createCampaign',
    summary: 'Launch a campaign',
    description:
      'Validates the campaign and answers the dispatch `accepted`; `dispatch.completed` or `dispatch.failed` follows. ' +
      '1 credit is charged on acceptance (402 `insufficient_credits` below it). A live key needs an `active` connection for the channel; ' +
      'a test key runs on the sandbox simulator (magic names in `campaign.name`: `[sandbox:fail]`, `[sandbox:transient]`, `[sandbox:reauth]`, `[sandbox:slow]`).',
    tag: 'Campaigns',
    auth: 'apiKey',
    body: CreateCampaignDto,
    response: 'Dispatch',
    errors: ['insufficient_credits', 'connection_required', 'connection_reauth_required', 'channel_live_unavailable'],
  },
  {
    method: 'GET',
    path: '/v1/dispatches',
    operationId: 'listDispatches',
    summary: 'List dispatches',
    description: 'Newest first.',
    tag: 'Dispatches',
    auth: 'apiKey',
    response: 'Dispatch',
    list: { query: ListDispatchesQueryDto },
  },
  {
    method: 'GET',
    path: '/v1/dispatches/:id',
    operationId: 'getDispatch',
    summary: 'Get a dispatch',
    description: 'Read-your-writes: found right after the launch.',
    tag: 'Dispatches',
    auth: 'apiKey',
    params: dispatchId,
    response: 'Dispatch',
  },
  {
    method: 'POST',
    path: '/v1/dispatches/:id/retry',
    operationId: 'retryDispatch',
    summary: 'Retry a failed dispatch',
    description: 'Only from `failed`; the dispatch is `accepted` again and is not charged again.',
    tag: 'Dispatches',
    auth: 'apiKey',
    params: dispatchId,
    response: 'Dispatch',
    errors: ['dispatch_not_retryable'],
  },
  {
    method: 'GET',
    path: '/v1/dispatches/:id/events',
    operationId: 'listDispatchEvents',
    summary: "A dispatch's audit trail",
    description: 'Its whole history from the event store, oldest first.',
    tag: 'Dispatches',
    auth: 'apiKey',
    params: dispatchId,
    response: 'DispatchEvent',
    list: { paginated: false },
  },
  {
    method: 'POST',
    path: '/v1/webhooks',
    operationId: 'createWebhookEndpoint',
    summary: 'Create a webhook endpoint',
    description: 'The answer carries the `signing_secret`; it is never shown again.',
    tag: 'Webhooks',
    auth: 'apiKey',
    body: CreateWebhookDto,
    response: 'WebhookEndpointWithSecret',
    errors: WEBHOOK_URL_ERRORS,
  },
  { method: 'GET', path: '/v1/webhooks', operationId: 'listWebhookEndpoints', summary: 'List webhook endpoints', tag: 'Webhooks', auth: 'apiKey', response: 'WebhookEndpoint', list: {} },
  { method: 'GET', path: '/v1/webhooks/:id', operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint', tag: 'Webhooks', auth: 'apiKey', params: endpointId, response: 'WebhookEndpoint' },
  {
    method: 'PATCH',
    path: '/v1/webhooks/:id',
    operationId: 'updateWebhookEndpoint',
    summary: 'Update a webhook endpoint',
    tag: 'Webhooks',
    auth: 'apiKey',
    params: endpointId,
    body: UpdateWebhookDto,
    response: 'WebhookEndpoint',
    errors: WEBHOOK_URL_ERRORS,
  },
  { method: 'DELETE', path: '/v1/webhooks/:id', operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint', tag: 'Webhooks', auth: 'apiKey', params: endpointId, response: 'DeletedWebhookEndpoint' },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret',
    description: 'The answer carries the new `signing_secret`; the old one stops at once.',
    tag: 'Webhooks',
    auth: 'apiKey',
    params: endpointId,
    response: 'WebhookEndpointWithSecret',
  },
  {
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: "List an endpoint's deliveries",
    tag: 'Webhooks',
    auth: 'apiKey',
    params: endpointId,
    response: 'Delivery',
    list: {},
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    operationId: 'redeliverWebhook',
    summary: 'Redeliver an event',
    description: 'A new delivery of the same event, with the same event `id`.',
    tag: 'Webhooks',
    auth: 'apiKey',
    params: { ...endpointId, delivery_id: 'The delivery id (`dlv_…`).' },
    response: 'Delivery',
  },
  {
    method: 'GET',
    path: '/v1/events',
    operationId: 'listEvents',
    summary: 'List events',
    description: "The account's events of the last 30 days in the webhook shape, newest first, to catch up on what an endpoint missed.",
    tag: 'Events',
    auth: 'apiKey',
    response: 'Event',
    list: { query: ListEventsQueryDto },
  },
  { method: 'GET', path: '/v1/events/:id', operationId: 'getEvent', summary: 'Get an event', tag: 'Events', auth: 'apiKey', params: { id: 'The event id (`evt_…`).' }, response: 'Event' },
  {
    method: 'GET',
    path: '/v1/account',
    operationId: 'getAccount',
    summary: "The key's account",
    description: "Its credits balance is the key's mode's.",
    tag: 'Account',
    auth: 'apiKey',
    response: 'Account',
    errors: ['resource_missing'],
  },
  {
    method: 'POST',
    path: '/admin/v1/accounts',
    operationId: 'createAccount',
    summary: 'Open an account',
    description: 'It starts with `credits` (default 1000) in each mode.',
    tag: 'Admin',
    auth: 'admin',
    body: CreateAccountDto,
    response: 'AdminAccount',
  },
  {
    method: 'POST',
    path: '/admin/v1/accounts/:id/keys',
    operationId: 'createApiKey',
    summary: 'Issue an API key',
    description: 'The key is in this answer only; only its hash is stored.',
    tag: 'Admin',
    auth: 'admin',
    params: accountId,
    body: CreateKeyDto,
    response: 'ApiKey',
  },
  {
    method: 'POST',
    path: '/admin/v1/accounts/:id/credits',
    operationId: 'grantCredits',
    summary: 'Grant credits',
    description: 'Answers the account with its new balances.',
    tag: 'Admin',
    auth: 'admin',
    params: accountId,
    body: GrantCreditsDto,
    response: 'AdminAccount',
  },
  { method: 'DELETE', path: '/admin/v1/keys/:id', operationId: 'revokeApiKey', summary: 'Revoke an API key', tag: 'Admin', auth: 'admin', params: { id: 'The key id (`key_…`).' }, response: 'RevokedApiKey' },
  { method: 'GET', path: '/healthz', operationId: 'getHealth', summary: 'Liveness', tag: 'Operations', auth: 'none', response: 'Health', rateLimited: false },
  { method: 'GET', path: '/readyz', operationId: 'getReadiness', summary: 'Readiness', description: 'Every dependency reachable; else 503 with `checks`.', tag: 'Operations', auth: 'none', response: 'Readiness', rateLimited: false },
  { method: 'GET', path: '/metrics', operationId: 'getMetrics', summary: 'Prometheus metrics', description: 'Request rates and latencies, dispatches by status, deliveries by outcome, consumer lag, processor checkpoint age.', tag: 'Operations', auth: 'none', response: 'MetricsText', raw: 'text/plain', rateLimited: false },
  { method: 'GET', path: '/openapi.json', operationId: 'getOpenApiDocument', summary: 'This OpenAPI document', tag: 'Operations', auth: 'none', response: 'OpenApiDocument', raw: 'application/json' },
  { method: 'GET', path: '/docs', operationId: 'getDocs', summary: 'This document as HTML', tag: 'Operations', auth: 'none', response: 'DocsPage', raw: 'text/html' },
];

const matches = (pattern: string, path: string): boolean => {
  const a = pattern.split('/');
  const b = path.replace(/\/+$/, '').split('/');
  return a.length === b.length && a.every((segment, i) => segment.startsWith(':') ? b[i] !== '' : segment === b[i]);
};

/** The methods a path allows, empty when no route has this path. */
export const allowedMethods = (path: string): string[] => ROUTES.filter((r) => matches(r.path, path)).map((r) => r.method);
