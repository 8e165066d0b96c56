import { ERROR_CATALOG, ErrorCode } from '@campaign-ops/api-errors';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '@campaign-ops/webhook-domain';
import { isReplayableStatus } from '../http/idempotency';
import { Route, ROUTES, RouteTag } from '../http/routes';
import { dtoSchemas } from './dto.schemas';
import { ERROR_MEANINGS, ERROR_SCHEMA, errorExample } from './error.schemas';
import { EVENT_SCHEMAS, eventSchemaName, JsonSchema, RESOURCE_SCHEMAS, schemaRef, SHARED_SCHEMAS } from './resource.schemas';
import { errorCodesByStatus, errorCodesOf } from './route-errors';

/**
 * The OpenAPI 3.1 document of the gateway, built from the route table (http/routes.ts), the
 * request schemas of libs/api-contract, the resource schemas and the error catalog: nothing is
 * written twice, so the document cannot drift from what the code serves.
 */
export type OpenApiDocument = Record<string, unknown> & { openapi: '3.1.0'; paths: Record<string, Record<string, JsonSchema>> };

const TAGS: Record<RouteTag | 'Webhook events', string> = {
  Campaigns: 'Launching campaigns: each launch becomes a dispatch.',
  Dispatches: 'Dispatches: operational records of launches, to monitor, retry and audit.',
  Webhooks: 'Webhook endpoints that receive signed events, and their deliveries.',
  Events: 'The events of the last 30 days, to catch up on what an endpoint missed.',
  Account: "The calling key's account.",
  Admin: 'The Admin API for operators; enabled only when ADMIN_TOKEN is set.',
  Operations: 'Health, readiness and this documentation; no key needed.',
  'Webhook events': 'What the service POSTs to your endpoints (the `webhooks` of this document).',
};

const EVENT_MEANINGS: Record<WebhookEventType, string> = {
  'dispatch.accepted': 'A dispatch was accepted and queued for processing (also after a retry).',
  'dispatch.completed': 'A dispatch was delivered to the provider.',
  'dispatch.failed': 'A dispatch failed due to a provider or validation error.',
  'connection.active': 'A platform connection was established.',
  'connection.reauth_required': 'A platform connection needs re-authentication.',
};

const DESCRIPTION = `Launch campaigns on ad networks as auditable **dispatches**, and receive signed webhooks when they change.

- **Envelope.** Every answer of the API is JSON: \`{success: true, data, request_id}\` (lists add \`has_more\`) or \`{success: false, error: {type, code, message, param?}, request_id}\`. Every success is 200.
- **Authentication.** \`Authorization: Bearer <key>\`: \`mk_live_…\` keys act on live data, \`mk_test_…\` keys on sandbox data; the two never mix. The Admin API takes the ADMIN_TOKEN instead.
- **Lists.** Newest first; \`limit\` (1..100, default 20) and \`starting_after\` (the last id of the previous page).
- **Idempotency.** Every POST takes an \`Idempotency-Key\`: for 24 h the same key and body replay the first answer (with \`Idempotent-Replayed: true\`); another body answers 409.
- **Rate limits.** Per key (per address without a valid key; /healthz and /readyz are not limited); every answer carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; past the limit, 429 with \`Retry-After\`.
- **Unknown routes.** A path that is not here answers 404 \`route_not_found\`; a path here with another method, 405 \`method_not_allowed\` with \`Allow\`.
- **Ids** are a prefix and a sortable unique part (\`dsp_\`, \`whk_\`, \`evt_\`, …); timestamps are ISO 8601 UTC with milliseconds.`;

const HEADERS: Record<string, JsonSchema> = {
  'X-Request-Id': { description: 'The request id, as in the body; a client-sent `X-Request-Id` is echoed (prefixed `req_`).', required: true, schema: schemaRef('RequestId') },
  'RateLimit-Limit': { description: "Requests allowed per second to the key's bucket.", schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Remaining': { description: 'Requests left right now.', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the bucket is full again.', schema: { type: 'integer', minimum: 0 } },
  'Retry-After': { description: 'Seconds to wait before trying again.', required: true, schema: { type: 'integer', minimum: 0 } },
  'Idempotent-Replayed': { description: '`true` when this answer is the replay of an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
};
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
/** The headers of every answer of a route (the probes are not rate limited). */
const everyAnswer = (route: Route) => ['X-Request-Id', ...(route.rateLimited === false ? [] : ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'])];
/** `Idempotent-Replayed` on the answers of a POST that the idempotency store keeps for replay. */
const replayable = (route: Route, status: number) => route.method === 'POST' && isReplayableStatus(status);

const PARAMETERS: Record<string, JsonSchema> = {
  XRequestId: {
    name: 'X-Request-Id',
    in: 'header',
    description: 'Your id for this request (at most 64 `[A-Za-z0-9_-]`); answered as `request_id`, prefixed `req_` if it lacks it.',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    description: 'For 24 h, the same key with the same body replays the first answer byte for byte (`Idempotent-Replayed: true`); with another body, 409 `idempotency_key_reused`; while the first is in flight, 409 `idempotency_key_in_use`. Successes and 402, 409 and 422 answers are kept; other errors free the key. Scoped to the account and mode (the operators, on the Admin API).',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
  },
  Limit: { name: 'limit', in: 'query', description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
  StartingAfter: { name: 'starting_after', in: 'query', description: 'The last id of the previous page.', schema: { type: 'string', pattern: '^[a-z]+_[0-9A-Za-z]+$' } },
};

const SECURITY_SCHEMES = {
  apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'mk_live_… | mk_test_…', description: 'A partner API key: `mk_live_` (live data) or `mk_test_` (sandbox) and at least 32 base62 characters.' },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN of the deployment (Admin API only).' },
};

/** `limit` and `starting_after`, described once as components/parameters. */
const PAGINATION = ['limit', 'starting_after'];
const REFERENCE = /"#\/components\/schemas\/([A-Za-z0-9]+)"/g;

/** A DTO's schema and those it refers to (its nested DTOs). */
function addWithReferences(name: string, from: Record<string, JsonSchema>, to: Record<string, JsonSchema>): void {
  if (to[name]) return;
  to[name] = from[name];
  for (const [, referenced] of JSON.stringify(from[name]).matchAll(REFERENCE)) addWithReferences(referenced, from, to);
}

const pascal = (words: string) => words.replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_, __, c: string) => c.toUpperCase());
const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');
const pathParams = (path: string) => [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);
const headersOf = (names: string[]) => Object.fromEntries(names.map((name) => [name, headerRef(name)]));

/** The document for this version of the service. */
export function buildOpenApiDocument(version: string, routes: ReadonlyArray<Route> = ROUTES): OpenApiDocument {
  const requests = dtoSchemas();
  const schemas: Record<string, JsonSchema> = { ...RESOURCE_SCHEMAS, ...EVENT_SCHEMAS, ...SHARED_SCHEMAS, Error: ERROR_SCHEMA };
  const envelope = (resource: string, list: boolean): JsonSchema => {
    const name = `${resource}${list ? 'List' : ''}Envelope`;
    schemas[name] ??= {
      type: 'object',
      description: list ? `A page of ${resource} in the envelope.` : `${resource} in the envelope.`,
      required: ['success', 'data', ...(list ? ['has_more'] : []), 'request_id'],
      properties: {
        success: { const: true },
        data: list ? { type: 'array', items: schemaRef(resource) } : schemaRef(resource),
        ...(list ? { has_more: { type: 'boolean', description: 'Whether another page follows.' } } : {}),
        request_id: schemaRef('RequestId'),
      },
    };
    return schemaRef(name);
  };

  const paths: OpenApiDocument['paths'] = {};
  for (const route of routes) {
    const key = openApiPath(route.path);
    paths[key] ??= {};
    if (paths[key][route.method.toLowerCase()]) throw new Error(`${route.method} ${route.path} is in the route table twice`);
    paths[key][route.method.toLowerCase()] = operationOf(route, envelope, schemas, requests);
  }

  // The resources show the request's campaign as it was validated.
  for (const [, referenced] of JSON.stringify(schemas).matchAll(REFERENCE)) if (requests[referenced]) addWithReferences(referenced, requests, schemas);

  return {
    openapi: '3.1.0',
    info: { title: 'Campaign Operations API', version, description: DESCRIPTION, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
    servers: [{ url: '/' }],
    tags: Object.entries(TAGS)
      .filter(([tag]) => tag === 'Webhook events' || routes.some((r) => r.tag === tag))
      .map(([name, description]) => ({ name, description })),
    paths,
    webhooks: Object.fromEntries(WEBHOOK_EVENT_TYPES.map((event) => [event, { post: webhookOf(event) }])),
    components: {
      schemas,
      parameters: PARAMETERS,
      headers: HEADERS,
      examples: Object.fromEntries(
        (Object.keys(ERROR_CATALOG) as ErrorCode[])
          .filter((code) => routes.some((route) => errorCodesOf(route).includes(code)))
          .map((code) => [code, { summary: `${ERROR_CATALOG[code].status} ${code}`, value: errorExample(code) }]),
      ),
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

function operationOf(route: Route, envelope: (resource: string, list: boolean) => JsonSchema, schemas: Record<string, JsonSchema>, requests: Record<string, JsonSchema>): JsonSchema {
  const declared = Object.keys(route.params ?? {});
  const inPath = pathParams(route.path);
  if (declared.join() !== inPath.join()) throw new Error(`${route.method} ${route.path}: params must describe exactly ${inPath.join(', ') || 'nothing'}`);

  const parameters: JsonSchema[] = [
    ...inPath.map((name) => ({ name, in: 'path', required: true, description: route.params![name], schema: { type: 'string' } })),
    ...(route.list && route.list.paginated !== false ? [parameterRef('Limit'), parameterRef('StartingAfter')] : []),
    ...Object.entries((requests[route.list?.query?.name ?? '']?.properties ?? {}) as Record<string, JsonSchema>)
      .filter(([name]) => !PAGINATION.includes(name))
      .map(([name, { description, ...schema }]) => ({ name, in: 'query', description, schema })),
    parameterRef('XRequestId'),
    ...(route.method === 'POST' ? [parameterRef('IdempotencyKey')] : []),
  ];

  let requestBody: JsonSchema | undefined;
  if (route.body) {
    const name = route.body.name;
    addWithReferences(name, requests, schemas);
    requestBody = { required: ((requests[name].required as string[] | undefined) ?? []).length > 0, content: { 'application/json': { schema: schemaRef(name) } } };
  }

  const success: JsonSchema = route.raw
    ? { description: route.summary + '.', headers: headersOf(everyAnswer(route)), content: { [route.raw]: { schema: schemaRef(route.response) } } }
    : {
        description: route.list ? `A list of ${route.response}.` : `The ${route.response}.`,
        headers: headersOf([...everyAnswer(route), ...(replayable(route, 200) ? ['Idempotent-Replayed'] : [])]),
        content: { 'application/json': { schema: envelope(route.response, route.list !== undefined) } },
      };
  const responses: Record<string, JsonSchema> = { '200': success };
  for (const [status, codes] of errorCodesByStatus(route)) {
    const headers = [...everyAnswer(route), ...(codes.includes('rate_limited') || codes.includes('service_unavailable') ? ['Retry-After'] : []), ...(replayable(route, status) ? ['Idempotent-Replayed'] : [])];
    responses[String(status)] = errorResponse(codes, headers);
  }

  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security: route.auth === 'apiKey' ? [{ apiKey: [] }] : route.auth === 'admin' ? [{ adminToken: [] }] : [],
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

function errorResponse(codes: ErrorCode[], headers: string[]): JsonSchema {
  return {
    description: codes.map((code) => `\`${code}\`: ${ERROR_MEANINGS[code]}`).join(' '),
    headers: headersOf(headers),
    content: {
      'application/json': {
        schema: schemaRef('Error'),
        examples: Object.fromEntries(codes.map((code) => [code, { $ref: `#/components/examples/${code}` }])),
      },
    },
  };
}

function webhookOf(event: WebhookEventType): JsonSchema {
  const header = (name: string, description: string, schema: JsonSchema) => ({ name, in: 'header', required: true, description, schema });
  return {
    operationId: `on${pascal(event)}`,
    summary: `\`${event}\``,
    description: `${EVENT_MEANINGS[event]} Verify \`X-SERVICE-Signature\` before processing, and de-duplicate on the body's \`id\`: delivery is at least once, order is not guaranteed.`,
    tags: ['Webhook events'],
    security: [],
    parameters: [
      header('X-SERVICE-Signature', '`sha256=` and the lowercase hex HMAC-SHA256 of the raw body, keyed with the endpoint’s `signing_secret`. The body only is signed.', {
        type: 'string',
        pattern: '^sha256=[0-9a-f]{64}$',
      }),
      header('X-SERVICE-Timestamp', 'Unix time (seconds) of when the event was sent.', { type: 'string', pattern: '^[0-9]+$' }),
      header('X-SERVICE-Event', 'The event name.', { type: 'string', const: event }),
      header('X-SERVICE-Event-Id', 'The body’s `id`, the same on every attempt and redelivery.', { type: 'string', pattern: '^evt_[0-9A-Za-z]+$' }),
      header('X-SERVICE-Delivery-Id', 'The delivery (see GET /v1/webhooks/{id}/deliveries).', { type: 'string', pattern: '^dlv_[0-9A-Za-z]+$' }),
      header('User-Agent', '`campaign-ops-webhooks/<version>`.', { type: 'string', pattern: '^campaign-ops-webhooks/' }),
    ],
    requestBody: { required: true, content: { 'application/json': { schema: schemaRef(eventSchemaName(event)) } } },
    responses: {
      '2XX': { description: 'Received: any 2xx within WEBHOOK_TIMEOUT_MS (default 10 s) makes the delivery `succeeded`.' },
      '4XX': { description: 'Refused: retried on WEBHOOK_RETRY_SCHEDULE (as is no answer in time), then the delivery is `failed`.' },
      '5XX': { description: 'Failed: retried on WEBHOOK_RETRY_SCHEDULE, then the delivery is `failed`.' },
    },
  };
}
