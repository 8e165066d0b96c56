import { CHANNELS } from '@campaign-ops/channels';
import { DISPATCH_EVENT_TYPES } from '@campaign-ops/dispatch-domain';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '@campaign-ops/webhook-domain';

/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses) of what the API answers: the resources of API.md
 * §2-§6 and the partner events of §5. Request bodies are not here: they come from
 * libs/api-contract, the same definitions that validate them.
 */
export type JsonSchema = Record<string, unknown>;

export const schemaRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

const id = (prefix: string, description: string): JsonSchema => ({
  type: 'string',
  pattern: `^${prefix}_[0-9A-Za-z]+$`,
  description,
  examples: [`${prefix}_01JBZ8KQ4T7W3X9M2N5P6R8S0V`],
});
/** API.md §1: ISO 8601 UTC with milliseconds and `Z`. */
const timestamp = (description: string): JsonSchema => ({ type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$', description, examples: ['2026-12-01T09:00:00.000Z'] });
const orNull = (schema: JsonSchema): JsonSchema => ({ ...schema, type: [schema.type, 'null'], ...(schema.examples ? { examples: [...(schema.examples as unknown[]), null] } : {}) });
const text = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });
const integer = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', description, ...extra });
const oneOf = (values: readonly string[], description: string): JsonSchema => ({ type: 'string', enum: [...values], description });
const constant = (value: string | boolean, description?: string): JsonSchema => ({ const: value, ...(description ? { description } : {}) });
/** An object whose every property is always present (null where it has no value), and which has no other: an undeclared field fails validation. */
const object = (description: string, properties: Record<string, JsonSchema>): JsonSchema => ({ type: 'object', description, required: Object.keys(properties), properties, additionalProperties: false });

const channel = oneOf(CHANNELS, 'The ad network.');
const environment = oneOf(['live', 'sandbox'], '`live` for a live key, `sandbox` for a test key.');
const mode = oneOf(['live', 'test'], 'The key mode (Admin API).');
const credits = integer('Credits.', { minimum: 0 });
const redirectUris: JsonSchema = {
  type: 'array',
  items: { type: 'string', format: 'uri' },
  description: "Where the account's OAuth rounds may send a person back: a `redirect_uri` must have the origin and path of one of them.",
  examples: [['https://partner.example/connected']],
};

const dispatchError = object('Why a dispatch failed.', {
  code: oneOf(['provider_validation_failed', 'connection_reauth_required', 'provider_unavailable'], 'What went wrong.'),
  message: text('In words; for a provider validation error, the provider’s own message.'),
  provider_code: orNull(text("The provider's error code, when it gave one.")),
  retryable: { type: 'boolean', description: 'Whether POST /v1/dispatches/{id}/retry may succeed without changing anything.' },
});

const endpointProperties = {
  id: id('whk', 'The endpoint id.'),
  url: text('HTTPS URL that receives event POSTs.', { format: 'uri', examples: ['https://partner.example/hooks'] }),
  events: { type: 'array', description: 'The events subscribed to.', items: oneOf(WEBHOOK_EVENT_TYPES, 'An event name.') },
  enabled: { type: 'boolean', description: 'False once every delivery has failed for 5 days, or when turned off with PATCH.' },
  disabled_reason: orNull(text('Why the endpoint was disabled.')),
  created_at: timestamp('When the endpoint was created.'),
};

const connectionProperties = {
  id: id('con', 'The connection id.'),
  channel,
  status: oneOf(['pending', 'active', 'reauth_required', 'revoked'], '`pending` until the OAuth consent, `active`, `reauth_required` when the provider refused its token, `revoked` once deleted or replaced.'),
  provider_account_id: text('The ad account at the provider.', { examples: ['act_1234567890'] }),
  environment,
  scopes: { type: 'array', description: 'The scopes asked for at the consent (empty for an imported token).', items: { type: 'string' } },
  currency: orNull(text("The ad account's currency (ISO 4217), read from the provider; null while pending.", { examples: ['EUR'] })),
  timezone: orNull(text("The ad account's time zone (IANA), read from the provider; null while pending.", { examples: ['Europe/Berlin'] })),
  expires_at: orNull(timestamp('When the access token expires; it is refreshed before. Null when it does not expire (or is not known).')),
  reauth_reason: orNull(text('Why the connection needs reauthorization.', { examples: ['refresh_refused'] })),
  created_at: timestamp('When the connection was made.'),
  updated_at: timestamp('Its last change.'),
};

const dispatchEventData = (event: 'accepted' | 'completed' | 'failed'): JsonSchema =>
  object(`\`data\` of \`dispatch.${event}\`.`, {
    dispatch_id: id('dsp', 'The dispatch.'),
    channel,
    status: constant(event),
    resource_type: constant('campaign'),
    action: constant('create'),
    environment,
    credits_charged: credits,
    ...(event === 'completed' ? { provider_resource_id: text('The resource at the provider (`sbx_<channel>_<digits>` in sandbox).') } : {}),
    ...(event === 'failed' ? { error: schemaRef('DispatchError') } : {}),
  });

const connectionEventData = (status: 'active' | 'reauth_required'): JsonSchema =>
  object(`\`data\` of \`connection.${status}\`.`, {
    connection_id: id('con', 'The connection.'),
    channel,
    status: constant(status),
    provider_account_id: text('The ad account at the provider.'),
    environment,
    ...(status === 'reauth_required' ? { reason: text('Why re-authentication is needed.') } : {}),
  });

const EVENT_DATA: Record<WebhookEventType, JsonSchema> = {
  'dispatch.accepted': dispatchEventData('accepted'),
  'dispatch.completed': dispatchEventData('completed'),
  'dispatch.failed': dispatchEventData('failed'),
  'connection.active': connectionEventData('active'),
  'connection.reauth_required': connectionEventData('reauth_required'),
};

/** `connection.reauth_required` → `ConnectionReauthRequiredEvent`: the schema of one partner event. */
export const eventSchemaName = (event: WebhookEventType): string =>
  event
    .split(/[._]/)
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join('') + 'Event';

const partnerEvent = (event: WebhookEventType): JsonSchema =>
  object(`A \`${event}\` event, as delivered to webhook endpoints and listed by the Events API.`, {
    id: id('evt', 'The event id: the same on every attempt and redelivery, for receivers to de-duplicate.'),
    event: constant(event),
    timestamp: timestamp('When the event occurred.'),
    data: EVENT_DATA[event],
  });

/** The partner events, one schema each, named by `eventSchemaName`. */
export const EVENT_SCHEMAS: Record<string, JsonSchema> = Object.fromEntries(WEBHOOK_EVENT_TYPES.map((event) => [eventSchemaName(event), partnerEvent(event)]));

/** What a route can answer as `data`: the names routes.ts refers to. */
export const RESOURCE_SCHEMAS = {
  Dispatch: object('A campaign launch as an operational record (API.md §3).', {
    id: id('dsp', 'The dispatch id.'),
    status: oneOf(['accepted', 'completed', 'failed'], '`accepted → completed`, `accepted → failed`, `failed → accepted` (retry).'),
    channel,
    resource_type: constant('campaign'),
    action: constant('create'),
    environment,
    credits_charged: integer('Credits charged; 1 for a campaign creation, not charged again on retry.', { minimum: 0 }),
    campaign: { $ref: '#/components/schemas/CampaignDto', description: "The request's campaign object." },
    connection_id: orNull(id('con', 'The connection used; null in sandbox without one.')),
    provider_resource_id: orNull(text('The resource at the provider; null until completed.', { examples: ['sbx_meta_ads_4821937465'] })),
    error: { oneOf: [schemaRef('DispatchError'), { type: 'null' }], description: 'Why it failed; null unless failed.' },
    attempts: integer('Provider calls over the whole life of the dispatch.', { minimum: 0 }),
    idempotency_key: orNull(text('The Idempotency-Key the launch was sent with.')),
    created_at: timestamp('When it was accepted first.'),
    updated_at: timestamp('Its last change.'),
    completed_at: orNull(timestamp('When it completed.')),
    failed_at: orNull(timestamp('When it last failed.')),
  }),
  CampaignValidation: object('The answer of a dry run (POST /v1/campaigns/validate): the campaign would be accepted as it is.', {
    valid: constant(true),
    channel,
    checked_by: oneOf(['provider', 'rules', 'sandbox'], '`provider`: the ad network’s own validate-only call; `rules`: the channel’s rules this service knows (the network has no such call); `sandbox`: the simulator (test keys).'),
    warnings: { type: 'array', items: { type: 'string' }, description: 'Remarks that do not refuse the campaign.' },
  }),
  DispatchEvent: object("One entry of a dispatch's audit trail, read from its event stream.", {
    id: id('evt', 'The event id.'),
    type: oneOf(DISPATCH_EVENT_TYPES, 'The domain event.'),
    revision: integer('Its position in the stream, from 0.', { minimum: 0 }),
    data: { type: 'object', description: 'The domain event as recorded.' },
    occurred_at: timestamp('When it was recorded.'),
  }),
  Connection: object('A connection of the account (in the key’s mode) to one ad account at a provider (API.md §4). Tokens are never shown.', connectionProperties),
  ConnectionWithAuthorizationUrl: {
    ...object('A connection; with `authorization_url` when the call started an OAuth round.', connectionProperties),
    properties: {
      ...connectionProperties,
      authorization_url: text('Only when an OAuth round started: the consent page to send the person’s browser to (good for 15 minutes, once).', { format: 'uri' }),
    },
  },
  OAuthRedirect: object('Where the browser is sent (also in `Location`).', {
    location: text("The partner's `redirect_uri` with `connection_id` and `status`, or `error`, added to its query.", { format: 'uri', examples: ['https://partner.example/connected?connection_id=con_01JBZ8KQ4T7W3X9M2N5P6R8S0V&status=active'] }),
  }),
  WebhookEndpoint: object('A webhook endpoint (SPEC.md §2.2), without its signing secret.', endpointProperties),
  WebhookEndpointWithSecret: object('A webhook endpoint with its signing secret: only in the answers to create and rotate-secret.', {
    ...endpointProperties,
    signing_secret: text('HMAC-SHA256 key of `X-SERVICE-Signature`. Shown only here; store it.', { pattern: '^whsec_[0-9A-Za-z]+$' }),
  }),
  DeletedWebhookEndpoint: object('A deleted webhook endpoint.', { id: id('whk', 'The endpoint id.'), deleted: constant(true) }),
  Delivery: object('One event on its way to one endpoint, with its attempts.', {
    id: id('dlv', 'The delivery id.'),
    event_id: id('evt', 'The event delivered.'),
    event: oneOf(WEBHOOK_EVENT_TYPES, 'Its name.'),
    status: oneOf(['pending', 'succeeded', 'failed'], '`failed` once every attempt of WEBHOOK_RETRY_SCHEDULE has failed.'),
    attempts: integer('Attempts made.', { minimum: 0 }),
    last_status_code: orNull(integer('The HTTP status of the last attempt; null when it got none.')),
    last_error: orNull(text('What went wrong on the last attempt.')),
    next_attempt_at: orNull(timestamp('When the next attempt is due; null when none is.')),
    created_at: timestamp('When the delivery was created.'),
  }),
  Event: {
    description: 'A partner event in the webhook shape `{id, event, timestamp, data}`.',
    oneOf: WEBHOOK_EVENT_TYPES.map((event) => schemaRef(eventSchemaName(event))),
    discriminator: { propertyName: 'event', mapping: Object.fromEntries(WEBHOOK_EVENT_TYPES.map((event) => [event, `#/components/schemas/${eventSchemaName(event)}`])) },
  },
  Account: object("The key's account, seen from the key's mode.", {
    id: id('acct', 'The account id.'),
    name: text('Its name.'),
    environment,
    credits_balance: integer("Credits left in the key's mode."),
    oauth_redirect_uris: redirectUris,
  }),
  AdminAccount: object('An account as operators see it.', {
    id: id('acct', 'The account id.'),
    name: text('Its name.'),
    credits: object('Credits in each mode.', { live: credits, test: credits }),
    oauth_redirect_uris: redirectUris,
    created_at: timestamp('When it was opened.'),
  }),
  ApiKey: object('A newly issued API key: `key` is shown only here; only its hash is stored.', {
    id: id('key', 'The key id, for revoking it.'),
    key: text('The API key: `mk_live_` or `mk_test_` and at least 32 base62 characters.', { pattern: '^mk_(live|test)_[0-9A-Za-z]{32,}$' }),
    mode,
    created_at: timestamp('When it was issued.'),
  }),
  RevokedApiKey: object('A revoked key: it answers 401 `api_key_revoked` from now on.', { id: id('key', 'The key id.'), revoked: constant(true) }),
  Health: object('The process is alive.', { status: constant('ok') }),
  Readiness: object('Every dependency is reachable.', {
    status: constant('ready'),
    checks: { type: 'object', description: 'Each dependency and its state.', additionalProperties: { type: 'string' }, examples: [{ eventStore: 'ok', readStore: 'ok', bus: 'ok', processors: 'ok' }] },
  }),
  OpenApiDocument: { type: 'object', description: 'This OpenAPI 3.1 document, generated from the route table.' },
  DocsPage: { type: 'string', description: 'This document as a self-contained HTML page.' },
} satisfies Record<string, JsonSchema>;

export type ResourceName = keyof typeof RESOURCE_SCHEMAS;

/** Schemas the resources refer to. */
export const SHARED_SCHEMAS: Record<string, JsonSchema> = {
  DispatchError: dispatchError,
  RequestId: { type: 'string', pattern: '^req_[A-Za-z0-9_-]+$', description: 'The request id, also in the `X-Request-Id` header.', examples: ['req_01JBZ8KQ4T7W3X9M2N5P6R8S0V'] },
};
