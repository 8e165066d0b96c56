import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { SecuritySchemeObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { DocsPageResponse, eventSchemaName, JsonSchema, NoBody, responseSchemaName, schemaRef } from '@campaign-ops/api-contract';
import { ERROR_CATALOG, ErrorCode } from '@campaign-ops/api-errors';
import { API_ANSWER, ApiAnswerExtension } from '@campaign-ops/service-runtime';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '@campaign-ops/webhook-domain';
import { isReplayableStatus } from '../http/idempotency';
import { dtoSchemas, responseSchemas } from './dto.schemas';
import { ERROR_MEANINGS, ERROR_SCHEMA, errorExample } from './error.schemas';
import { errorCodesByStatus, RouteKind } from './route-errors';

/**
 * The OpenAPI 3.1 document of the gateway, read by @nestjs/swagger from the controllers (their
 * routes, `@ApiOperation`, `@ApiParam`, `@ApiSecurity`, `@ApiTags` and `@ApiAnswer`), completed
 * here with what every route of a kind shares: the envelope, the error answers of the catalog,
 * the headers, and the request schemas read from the DTOs' class-validator decorators. Nothing is
 * written twice, so the document cannot drift from what the code serves.
 */
export type OpenApiDocument = Record<string, unknown> & { openapi: '3.1.0'; paths: Record<string, Record<string, JsonSchema>> };

const TAGS: Record<string, string> = {
  Campaigns: 'Launching campaigns: each launch becomes a dispatch.',
  Dispatches: 'Dispatches: operational records of launches, to monitor, retry and audit.',
  Webhooks: 'Webhook endpoints that receive signed events, and their deliveries.',
  Events: 'The events of the last 30 days, to catch up on what an endpoint missed.',
  Connections: 'Connections to ad accounts at the providers: token import, OAuth, reauthorization.',
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
  'X-Request-Id': {
    description: 'The request id, as in the body; a client-sent `X-Request-Id` is echoed (prefixed `req_`).',
    required: true,
    schema: schemaRef('RequestId'),
  },
  'RateLimit-Limit': { description: "Requests allowed per second to the key's bucket.", schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Remaining': { description: 'Requests left right now.', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the bucket is full again.', schema: { type: 'integer', minimum: 0 } },
  'Retry-After': { description: 'Seconds to wait before trying again.', required: true, schema: { type: 'integer', minimum: 0 } },
  Location: {
    description: "The partner's `redirect_uri`, with `connection_id` and `status` (or `error`) added to its query.",
    required: true,
    schema: { type: 'string', format: 'uri' },
  },
  'Idempotent-Replayed': {
    description: '`true` when this answer is the replay of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
};
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
/** The headers of every answer of a route (the probes are not rate limited). */
const everyAnswer = (route: RouteKind) => [
  'X-Request-Id',
  ...(route.rateLimited === false ? [] : ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
];
/** `Idempotent-Replayed` on the answers of a POST that the idempotency store keeps for replay. */
const replayable = (route: RouteKind, status: number) => route.method === 'POST' && isReplayableStatus(status);

const PARAMETERS: Record<string, JsonSchema> = {
  XRequestId: {
    name: 'X-Request-Id',
    in: 'header',
    description:
      'Your id for this request: kept when it is 1 to 64 of `[A-Za-z0-9_-]` (answered as `request_id`, prefixed `req_` if it lacks it); any other value is never refused, but replaced by an id of ours, as when none is sent.',
    schema: { type: 'string' },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    description:
      'For 24 h, the same key with the same body replays the first answer byte for byte (`Idempotent-Replayed: true`); with another body, 409 `idempotency_key_reused`; while the first is in flight, 409 `idempotency_key_in_use`. Successes and 402, 409 and 422 answers are kept; other errors free the key. Scoped to the account and mode (the operators, on the Admin API).',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
  },
  Limit: { name: 'limit', in: 'query', description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
  StartingAfter: {
    name: 'starting_after',
    in: 'query',
    description: 'The last id of the previous page.',
    schema: { type: 'string', pattern: '^[a-z]+_[0-9A-Za-z]+$' },
  },
};

const SECURITY_SCHEMES: Record<'apiKey' | 'adminToken', SecuritySchemeObject> = {
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'mk_live_… | mk_test_…',
    description: 'A partner API key: `mk_live_` (live data) or `mk_test_` (sandbox) and at least 32 base62 characters.',
  },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN of the deployment (Admin API only).' },
};

/** The prefix of the ids a path names, by the collection the path is under (and `delivery_id`: a delivery). */
const ID_PREFIXES: Array<[path: string, prefix: string]> = [
  ['/v1/dispatches/', 'dsp'],
  ['/v1/webhooks/', 'whk'],
  ['/v1/connections/', 'con'],
  ['/v1/events/', 'evt'],
  ['/admin/v1/accounts/', 'acct'],
  ['/admin/v1/keys/', 'key'],
];
/** A path parameter's schema: an id of its collection (one that is not answers 404 `resource_missing`, as one that does not exist). */
function pathIdSchema(path: string, name: string): JsonSchema {
  const prefix = name === 'delivery_id' ? 'dlv' : ID_PREFIXES.find(([under]) => path.startsWith(under))?.[1];
  if (!prefix) throw new Error(`${path}: no id prefix is known for {${name}}`);
  return { type: 'string', pattern: `^${prefix}_[0-9A-Za-z]+$`, examples: [`${prefix}_01JD6Y4M2X8Q9T3V5R7W0Z1B2C`] };
}

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
const headersOf = (names: string[]) => Object.fromEntries(names.map((name) => [name, headerRef(name)]));

/** The document of this version of the service, read from the controllers of `app`. */
export function buildOpenApiDocument(app: INestApplication, version: string): OpenApiDocument {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Campaign Operations API')
    .setVersion(version)
    .addSecurity('apiKey', SECURITY_SCHEMES.apiKey)
    .addSecurity('adminToken', SECURITY_SCHEMES.adminToken)
    .build();
  return completeDocument(SwaggerModule.createDocument(app, config), version);
}

/** GET /docs is Swagger UI's page (SwaggerModule, in http-app.ts), described here as the others. */
const DOCS_OPERATION: JsonSchema = {
  operationId: 'getDocs',
  summary: 'This document as HTML',
  tags: ['Operations'],
  [API_ANSWER]: { resource: responseSchemaName(DocsPageResponse), raw: 'text/html' },
};

/** The request id of every answer, in the envelope. */
const REQUEST_ID: JsonSchema = {
  type: 'string',
  pattern: '^req_[A-Za-z0-9_-]+$',
  description: 'The request id, also in the `X-Request-Id` header.',
  examples: ['req_01JBZ8KQ4T7W3X9M2N5P6R8S0V'],
};

/** The document @nestjs/swagger read from the controllers, with what every route of its kind shares. */
export function completeDocument(generated: OpenAPIObject, version: string): OpenApiDocument {
  const requests = dtoSchemas();
  const schemas: Record<string, JsonSchema> = { ...responseSchemas(), RequestId: REQUEST_ID, Error: ERROR_SCHEMA };
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
      additionalProperties: false,
    };
    return schemaRef(name);
  };

  const operations = Object.entries({ ...generated.paths, '/docs': { get: DOCS_OPERATION } }).flatMap(([path, item]) =>
    Object.entries(item as Record<string, JsonSchema>).map(([method, operation]) => ({ path, method, operation })),
  );
  const paths: OpenApiDocument['paths'] = {};
  for (const { path, method, operation } of operations) {
    paths[path] ??= {};
    paths[path][method] = operationOf(method.toUpperCase(), path, operation, envelope, schemas, requests);
  }
  // The resources show the request's campaign as it was validated.
  for (const [, referenced] of JSON.stringify(schemas).matchAll(REFERENCE)) if (requests[referenced]) addWithReferences(referenced, requests, schemas);

  const usedTags = new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((operation) => operation.tags as string[])));
  const pathsJson = JSON.stringify(paths);
  return {
    openapi: '3.1.0',
    info: { title: generated.info.title, version, description: DESCRIPTION, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
    servers: [{ url: '/' }],
    tags: Object.entries(TAGS)
      .filter(([tag]) => tag === 'Webhook events' || usedTags.has(tag))
      .map(([name, description]) => ({ name, description })),
    paths,
    webhooks: Object.fromEntries(WEBHOOK_EVENT_TYPES.map((event) => [event, { post: webhookOf(event) }])),
    components: {
      schemas,
      parameters: PARAMETERS,
      headers: HEADERS,
      examples: Object.fromEntries(
        (Object.keys(ERROR_CATALOG) as ErrorCode[])
          .filter((code) => pathsJson.includes(`"#/components/examples/${code}"`))
          .map((code) => [code, { summary: `${ERROR_CATALOG[code].status} ${code}`, value: errorExample(code) }]),
      ),
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

function operationOf(
  method: string,
  path: string,
  generated: JsonSchema,
  envelope: (resource: string, list: boolean) => JsonSchema,
  schemas: Record<string, JsonSchema>,
  requests: Record<string, JsonSchema>,
): JsonSchema {
  const answer = generated[API_ANSWER] as ApiAnswerExtension | undefined;
  if (!answer) throw new Error(`${method} ${path} has no @ApiAnswer: every route says what it answers`);
  const security = (generated.security ?? []) as Record<string, unknown>[];
  const auth = security.some((s) => 'apiKey' in s) ? 'apiKey' : security.some((s) => 'adminToken' in s) ? 'admin' : 'none';
  const bodyRef = (generated.requestBody as { content?: Record<string, { schema?: { $ref?: string } }> } | undefined)?.content?.['application/json']?.schema
    ?.$ref;
  const bodyName = bodyRef?.split('/').pop();
  const body = bodyName !== undefined && bodyName !== NoBody.name ? bodyName : undefined;
  const inPath = ((generated.parameters ?? []) as JsonSchema[]).filter((p) => p.in === 'path');
  // Query parameters a route names with @ApiQuery (lists take theirs from their query DTO instead).
  const inQuery = answer.list ? [] : ((generated.parameters ?? []) as JsonSchema[]).filter((p) => p.in === 'query');
  const route: RouteKind = {
    method,
    path,
    auth,
    body: body !== undefined,
    list: answer.list,
    errors: answer.errors,
    rateLimited: answer.rateLimited,
    openQuery: inQuery.length > 0,
  };
  const parameters: JsonSchema[] = [
    ...inPath.map(({ name, description }) => ({ name, in: 'path', required: true, description, schema: pathIdSchema(path, name as string) })),
    ...inQuery.map(({ name, description, required }) => ({ name, in: 'query', required: required === true, description, schema: { type: 'string' } })),
    ...(answer.list?.paginated ? [parameterRef('Limit'), parameterRef('StartingAfter')] : []),
    ...Object.entries((requests[answer.list?.query ?? '']?.properties ?? {}) as Record<string, JsonSchema>)
      .filter(([name]) => !PAGINATION.includes(name))
      .map(([name, { description, ...schema }]) => ({ name, in: 'query', description, schema })),
    parameterRef('XRequestId'),
    ...(method === 'POST' ? [parameterRef('IdempotencyKey')] : []),
  ];

  let requestBody: JsonSchema | undefined;
  if (body) {
    addWithReferences(body, requests, schemas);
    requestBody = {
      required: ((requests[body].required as string[] | undefined) ?? []).length > 0,
      content: { 'application/json': { schema: schemaRef(body) } },
    };
  }

  const summary = generated.summary as string;
  const success: JsonSchema = answer.redirect
    ? {
        description: summary + '.',
        headers: headersOf([...everyAnswer(route), 'Location']),
        content: { 'application/json': { schema: envelope(answer.resource, false) } },
      }
    : answer.raw
      ? { description: summary + '.', headers: headersOf(everyAnswer(route)), content: { [answer.raw]: { schema: schemaRef(answer.resource) } } }
      : {
          description: answer.list ? `A list of ${answer.resource}.` : `The ${answer.resource}.`,
          headers: headersOf([...everyAnswer(route), ...(replayable(route, 200) ? ['Idempotent-Replayed'] : [])]),
          content: { 'application/json': { schema: envelope(answer.resource, answer.list !== undefined) } },
        };
  const responses: Record<string, JsonSchema> = { [answer.redirect ? '302' : '200']: success };
  for (const [status, codes] of errorCodesByStatus(route)) {
    const headers = [
      ...everyAnswer(route),
      ...(codes.includes('rate_limited') || codes.includes('service_unavailable') ? ['Retry-After'] : []),
      ...(replayable(route, status) ? ['Idempotent-Replayed'] : []),
    ];
    responses[String(status)] = errorResponse(codes, headers);
  }

  return {
    operationId: generated.operationId,
    summary,
    ...(generated.description ? { description: generated.description } : {}),
    tags: generated.tags,
    security: auth === 'apiKey' ? [{ apiKey: [] }] : auth === 'admin' ? [{ adminToken: [] }] : [],
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
      header(
        'X-SERVICE-Signature',
        '`sha256=` and the lowercase hex HMAC-SHA256 of the raw body, keyed with the endpoint’s `signing_secret`. The body only is signed.',
        {
          type: 'string',
          pattern: '^sha256=[0-9a-f]{64}$',
        },
      ),
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
