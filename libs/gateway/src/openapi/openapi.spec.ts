import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { INestApplication, RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { Test } from '@nestjs/testing';
import { ERROR_CATALOG } from '@campaign-ops/api-errors';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';
import { WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { GatewayModule } from '../gateway.module';
import { ApiDocument } from './api-document';
import { buildOpenApiDocument, OpenApiDocument } from './openapi.document';

const ROOT = resolve(__dirname, '../../../..');
/** The one route a browser calls: no key, and a 302 where every other route answers 200. */
const OAUTH_CALLBACK = '/v1/connections/oauth/callback';
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const CONTROLLERS = [
  ...(Reflect.getMetadata('controllers', GatewayModule) as Function[]),
  ...(InfrastructureModule.forRoot({} as ServiceConfig).controllers ?? []),
];

let app: INestApplication;
let document: OpenApiDocument;
let components: Record<string, Record<string, any>>;
const operation = (method: string, path: string) => document.paths[path]?.[method.toLowerCase()] as Record<string, any>;
/** Every operation of the document, as `[METHOD, path, operation]`. */
const operations = () =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => [method.toUpperCase(), path, op as Record<string, any>] as const),
  );

beforeAll(async () => {
  // The gateway's controllers, as @nestjs/swagger reads them in the running app (their dependencies are not needed to describe them).
  const moduleRef = await Test.createTestingModule({ controllers: CONTROLLERS as Type[] })
    .useMocker(() => ({}))
    .compile();
  app = moduleRef.createNestApplication({ logger: false });
  document = buildOpenApiDocument(app, VERSION);
  components = document.components as Record<string, Record<string, any>>;
});
afterAll(() => app?.close());

/** Every `METHOD /path` the Nest controllers of the gateway (and its health checks) serve, in OpenAPI's path form. */
function servedRoutes(): string[] {
  return CONTROLLERS.flatMap((controller) => {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    const prototype = controller.prototype as Record<string, Function>;
    return Object.getOwnPropertyNames(prototype)
      .filter((name) => name !== 'constructor' && Reflect.getMetadata(METHOD_METADATA, prototype[name]) !== undefined)
      .map((name) => {
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, prototype[name]) as number];
        const path = `/${base}/${String(Reflect.getMetadata(PATH_METADATA, prototype[name]))}`
          .replace(/\/+/g, '/')
          .replace(/(.)\/$/, '$1')
          .replace(/:([A-Za-z_]+)/g, '{$1}');
        return `${method} ${path}`;
      });
  });
}

describe('the document as a route table', () => {
  it('describes exactly what the controllers serve, and Swagger UI at /docs', () => {
    expect(
      operations()
        .map(([method, path]) => `${method} ${path}`)
        .sort(),
    ).toEqual([...servedRoutes(), 'GET /docs'].sort());
  });

  it('answers which methods a path allows', () => {
    const routes = new ApiDocument();
    routes.load(document);
    expect(routes.allowedMethods('/v1/webhooks/whk_1')).toEqual(['GET', 'PATCH', 'DELETE']);
    expect(routes.allowedMethods('/v1/campaigns/')).toEqual(['POST']);
    expect(routes.allowedMethods('/openapi.json')).toEqual(['GET']);
    expect(routes.allowedMethods('/v1/nothing')).toEqual([]);
    expect(routes.allowedMethods('/v1/webhooks//deliveries')).toEqual([]);
  });

  it('has unique operation ids', () => expect(new Set(operations().map(([, , op]) => op.operationId)).size).toBe(operations().length));
});

describe('GET /openapi.json', () => {
  it('passes `redocly lint` with no errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(document, null, 2));
      const lint = spawnSync(process.execPath, [require.resolve('@redocly/cli/bin/cli.js'), 'lint', file, '--format=json'], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      });
      expect(lint.error).toBeUndefined();
      const report = JSON.parse(lint.stdout) as {
        totals: { errors: number; warnings: number };
        problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
      };
      const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
      expect({ errors: report.totals.errors, problems: problems.filter((p) => p.startsWith('error')) }).toEqual({ errors: 0, problems: [] });
      // Warnings are allowed, but only these: the probes and /metrics have no 4xx answer (never rate limited), and the OAuth callback no 2xx (it answers 302).
      const expected = [
        /^warn operation-4xx-response at #\/paths\/~1(healthz|readyz|metrics)\/get\/responses:/,
        /^warn operation-2xx-response at #\/paths\/~1v1~1connections~1oauth~1callback\/get\/responses:/,
      ];
      expect(problems.filter((p) => !expected.some((allowed) => allowed.test(p)))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('is OpenAPI 3.1 of this version, served from the root', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: expect.any(String), version: VERSION });
    expect(document.servers).toEqual([{ url: '/' }]);
  });

  it('describes every operation: its security, parameters, errors and headers', () => {
    for (const [method, path, op] of operations()) {
      const browser = path === OAUTH_CALLBACK;
      const auth = browser ? 'none' : path.startsWith('/v1/') ? 'apiKey' : path.startsWith('/admin/') ? 'adminToken' : 'none';
      const limited = !['/healthz', '/readyz', '/metrics'].includes(path);
      expect(op).toMatchObject({ operationId: expect.any(String), summary: expect.any(String), tags: [expect.any(String)] });
      expect(op.security).toEqual(auth === 'none' ? [] : [{ [auth]: [] }]);
      expect(op.responses[browser ? '302' : '200']).toBeDefined();
      for (const status of [...(limited ? ['429'] : []), '500', '503'])
        expect(op.responses[status].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
      expect(op.responses['429'] !== undefined).toBe(limited);
      if (auth !== 'none')
        expect(Object.keys(op.responses['401'].content['application/json'].examples)).toEqual(expect.arrayContaining(['api_key_missing', 'api_key_invalid']));
      if (path.includes('/{')) expect(op.responses['404'].content['application/json'].examples).toHaveProperty('resource_missing');
      if (op.requestBody) for (const status of ['400', '413', '415']) expect(op.responses[status]).toBeDefined();
      const parameters = (op.parameters as Record<string, string>[]).map((p) => p.$ref ?? `${p.in}:${p.name}`);
      expect(parameters).toContain('#/components/parameters/XRequestId');
      expect(parameters.includes('#/components/parameters/IdempotencyKey')).toBe(method === 'POST');
      for (const [, name] of path.matchAll(/\{([A-Za-z_]+)\}/g)) expect(parameters).toContain(`path:${name}`);
      for (const status of Object.keys(op.responses)) {
        const headers = Object.keys(op.responses[status].headers);
        expect(headers).toEqual(expect.arrayContaining(['X-Request-Id', ...(limited ? ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] : [])]));
        if (method === 'POST' && ['200', '402', '409', '422'].includes(status)) expect(headers).toContain('Idempotent-Replayed');
        if (status === '429' || status === '503') expect(headers).toContain('Retry-After');
      }
    }
  });

  it('names the route-specific errors its controller declares', () => {
    expect(Object.keys(operation('POST', '/v1/campaigns').responses['402'].content['application/json'].examples)).toEqual(['insufficient_credits']);
    expect(Object.keys(operation('POST', '/v1/webhooks').responses['400'].content['application/json'].examples)).toEqual(
      expect.arrayContaining(['url_forbidden_host', 'event_unknown']),
    );
    expect(operation('POST', '/v1/dispatches/{id}/retry').responses['409'].content['application/json'].examples).toHaveProperty('dispatch_not_retryable');
    expect(operation('POST', '/v1/dispatches/{id}/retry')).not.toHaveProperty('requestBody');
  });

  it('answers lists in the envelope with has_more, and paginates them', () => {
    const list = operation('GET', '/v1/dispatches');
    expect(list.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/DispatchListEnvelope' });
    expect(components.schemas.DispatchListEnvelope).toMatchObject({
      required: ['success', 'data', 'has_more', 'request_id'],
      properties: { data: { type: 'array', items: { $ref: '#/components/schemas/Dispatch' } }, has_more: { type: 'boolean' } },
    });
    expect(list.parameters).toEqual(
      expect.arrayContaining([
        { $ref: '#/components/parameters/Limit' },
        { $ref: '#/components/parameters/StartingAfter' },
        expect.objectContaining({ name: 'status', in: 'query' }),
      ]),
    );
    expect(operation('GET', '/v1/events').parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'type' }), expect.objectContaining({ name: 'created_after' })]),
    );
  });

  it('takes request bodies from the DTOs that validate them', () => {
    expect(operation('POST', '/v1/campaigns').requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateCampaignDto' });
    expect(components.schemas.CreateCampaignDto).toMatchObject({
      required: ['channel', 'campaign'],
      additionalProperties: false,
      properties: { channel: { enum: expect.arrayContaining(['meta_ads', 'google_ads']) }, campaign: { $ref: '#/components/schemas/CampaignDto' } },
    });
    expect(components.schemas.BudgetDto).toMatchObject({
      required: ['amount_micros', 'currency', 'type'],
      properties: { amount_micros: { type: 'integer', minimum: 1 }, currency: { $ref: '#/components/schemas/CurrencyCode' } },
    });
    expect(components.schemas.CurrencyCode.enum).toEqual(expect.arrayContaining(['USD', 'EUR']));
    expect(components.schemas.TimeZone.enum).toEqual(expect.arrayContaining(['UTC', 'Europe/Berlin']));
    expect(components.schemas.ScheduleDto.required).toEqual(['start_at', 'timezone']);
    expect(components.schemas.UpdateWebhookDto).not.toHaveProperty('required');
    expect(components.schemas.Dispatch.properties.campaign).toMatchObject({ $ref: '#/components/schemas/CampaignDto' });
  });

  it('names every error code and type of the catalog in the Error schema', () => {
    const error = components.schemas.Error.properties.error.properties;
    expect([...error.code.enum].sort()).toEqual(Object.keys(ERROR_CATALOG).sort());
    expect([...error.type.enum].sort()).toEqual([...new Set(Object.values(ERROR_CATALOG).map((e) => e.type))].sort());
  });

  it('shows the dispatch with every field of docs/api.md#dispatches-and-retries, and the secret only where it is issued', () => {
    expect(Object.keys(components.schemas.Dispatch.properties)).toEqual(
      'id status channel resource_type action environment credits_charged campaign connection_id provider_resource_id error attempts idempotency_key created_at updated_at completed_at failed_at'.split(
        ' ',
      ),
    );
    expect(components.schemas.WebhookEndpoint.properties).not.toHaveProperty('signing_secret');
    expect(operation('POST', '/v1/webhooks').responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/WebhookEndpointWithSecretEnvelope',
    });
  });

  it('describes the five webhook events with their headers and payloads', () => {
    const webhooks = document.webhooks as Record<string, { post: Record<string, any> }>;
    expect(Object.keys(webhooks)).toEqual([...WEBHOOK_EVENT_TYPES]);
    for (const event of WEBHOOK_EVENT_TYPES) {
      const post = webhooks[event].post;
      expect(post.parameters.map((p: { name: string }) => p.name)).toEqual(
        expect.arrayContaining(['X-SERVICE-Signature', 'X-SERVICE-Timestamp', 'X-SERVICE-Event', 'X-SERVICE-Event-Id', 'X-SERVICE-Delivery-Id']),
      );
      const body = components.schemas[post.requestBody.content['application/json'].schema.$ref.split('/').pop()];
      expect(body).toMatchObject({ required: ['id', 'event', 'timestamp', 'data'], properties: { event: { const: event } } });
    }
    const completed = components.schemas.DispatchCompletedEvent.properties.data;
    expect(completed.required).toEqual(expect.arrayContaining(['dispatch_id', 'channel', 'status', 'provider_resource_id']));
  });

  describe('connections', () => {
    it('shows the connection with every field of docs/api.md#connections-and-oauth, and authorization_url only on the answers that start a round', () => {
      const fields = 'id channel status provider_account_id environment scopes currency timezone expires_at reauth_reason created_at updated_at'.split(' ');
      expect(Object.keys(components.schemas.Connection.properties)).toEqual(fields);
      expect(components.schemas.Connection.properties).not.toHaveProperty('access_token');
      expect(components.schemas.ConnectionWithAuthorizationUrl).toMatchObject({ required: fields, properties: { authorization_url: { format: 'uri' } } });
      for (const [method, path] of [
        ['POST', '/v1/connections'],
        ['POST', '/v1/connections/{id}/reauthorize'],
      ]) {
        expect(operation(method, path).responses['200'].content['application/json'].schema).toEqual({
          $ref: '#/components/schemas/ConnectionWithAuthorizationUrlEnvelope',
        });
      }
      expect(operation('GET', '/v1/connections/{id}').responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/ConnectionEnvelope',
      });
    });

    it('takes the nested credentials, the redirect_uri and the sandbox account from the DTOs', () => {
      expect(operation('POST', '/v1/connections').requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateConnectionDto' });
      expect(components.schemas.CreateConnectionDto).toMatchObject({
        required: ['channel', 'provider_account_id'],
        additionalProperties: false,
        properties: {
          credentials: { $ref: '#/components/schemas/ConnectionCredentialsDto' },
          sandbox: { $ref: '#/components/schemas/SandboxAccountDto' },
          redirect_uri: { format: 'uri' },
        },
      });
      expect(components.schemas.ConnectionCredentialsDto).toMatchObject({
        required: ['access_token'],
        properties: { access_token: { writeOnly: true }, refresh_token: { writeOnly: true } },
      });
      expect(Object.keys(operation('POST', '/v1/connections').responses['400'].content['application/json'].examples)).toEqual(
        expect.arrayContaining(['credentials_invalid', 'provider_account_unreachable', 'url_not_https']),
      );
      expect(Object.keys(operation('POST', '/v1/connections').responses['409'].content['application/json'].examples)).toContain('connection_exists');
      expect(Object.keys(operation('POST', '/v1/connections').responses['422'].content['application/json'].examples)).toContain('channel_not_configured');
      expect(Object.keys(operation('POST', '/v1/connections').responses['502'].content['application/json'].examples)).toEqual(['provider_unavailable']);
      expect(operation('GET', '/v1/connections').parameters).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: 'channel', in: 'query' }), expect.objectContaining({ name: 'status', in: 'query' })]),
      );
    });

    it('describes the OAuth callback as the browser meets it: no key, a 302 with Location, state_invalid in the envelope', () => {
      const callback = operation('GET', OAUTH_CALLBACK);
      expect(callback.security).toEqual([]);
      expect(callback.responses).not.toHaveProperty('200');
      expect(callback.responses).not.toHaveProperty('401');
      expect(Object.keys(callback.responses['302'].headers)).toContain('Location');
      expect(callback.responses['302'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OAuthRedirectEnvelope' });
      expect(Object.keys(callback.responses['400'].content['application/json'].examples)).toEqual(['body_invalid_json', 'state_invalid']);
      expect(
        callback.parameters
          .filter((p: { in?: string }) => p.in === 'query')
          .map((p: { name: string }) => p.name)
          .sort(),
      ).toEqual(['code', 'error', 'state']);
    });
  });

  it('defines the bearer security schemes', () => {
    expect(components.securitySchemes).toMatchObject({ apiKey: { type: 'http', scheme: 'bearer' }, adminToken: { type: 'http', scheme: 'bearer' } });
  });
});
