/**
 * The served document and the server agree, judged by requests generated from /openapi.json
 * itself (test/support/schema-arbitrary.ts), against the standalone process:
 *
 * - a request the document says is valid (its body and query checked with ajv, 2020-12, against
 *   the operation's schemas) is never refused for its shape: no 400 `parameter_*` or
 *   `body_invalid_json`, and nothing at or above 500. What the document leaves to the server at
 *   run time may still refuse it (a redirect_uri not registered, a host that does not resolve, an
 *   id that does not exist, credits run out): those answers carry their own codes.
 * - a request the document says is invalid (a valid one with one thing broken, ajv agreeing it is
 *   now invalid) is refused with 400.
 *
 * Seeded (CONFORMANCE_SEED), CONFORMANCE_RUNS of each kind per operation; loopback only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { brokenValue, OpenApi, Schema, validatorOf, validValue } from '../support/schema-arbitrary';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'conformance-admin-token-0123456789';
const SEED = Number(process.env.CONFORMANCE_SEED ?? 20_261_128);
const RUNS = Number(process.env.CONFORMANCE_RUNS ?? 25);
/** The codes of a request refused for its shape (docs/api.md#errors). */
const SHAPE_CODES = new Set(['parameter_missing', 'parameter_invalid', 'parameter_unknown', 'body_invalid_json']);

interface Operation {
  method: string;
  path: string;
  body?: Schema;
  query: Array<{ name: string; required: boolean; schema: Schema }>;
}

describe('the served document and the server agree (requests generated from /openapi.json)', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let document: OpenApi;
  let check: ReturnType<typeof validatorOf>;
  let partner: PartnerClient;
  let admin: PartnerClient;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-conformance-'));
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    const keys = await openAccountWithKeys(admin, 'Conformance');
    partner = new PartnerClient(service.url, keys.testKey);
    document = (await partner.get('/openapi.json')).body as OpenApi;
    check = validatorOf(document);
    // Real resources for the paths that name one.
    ids.account = keys.accountId;
    ids.dispatch = (await partner.post('/v1/campaigns', sandboxCampaign())).body.data.id;
    ids.webhook = (await partner.post('/v1/webhooks', { url: 'https://127.0.0.1:9/hooks', events: ['dispatch.completed'] })).body.data.id;
    ids.connection = (await partner.post('/v1/connections', { channel: 'meta_ads', provider_account_id: 'act_conformance' })).body.data.id;
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Every operation a partner or an operator sends a body or a query to (the browser's OAuth callback aside). */
  function operations(): Operation[] {
    const found: Operation[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (path.includes('oauth/callback')) continue;
        const parameters = ((operation.parameters ?? []) as Schema[]).map((p) => (p.$ref ? document.components.parameters![p.$ref.split('/').pop()!] : p));
        const query = parameters
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name as string, required: p.required === true, schema: p.schema as Schema }));
        const body = operation.requestBody?.content?.['application/json']?.schema as Schema | undefined;
        if (body || query.length > 0) found.push({ method: method.toUpperCase(), path, body, query });
      }
    }
    return found;
  }

  /** The path with a real resource's id where it names one. */
  function pathOf(template: string): string {
    const kind = template.startsWith('/admin/v1/accounts')
      ? 'account'
      : template.startsWith('/v1/dispatches')
        ? 'dispatch'
        : template.startsWith('/v1/webhooks')
          ? 'webhook'
          : 'connection';
    return template.replace(/\{[^}]+\}/g, () => ids[kind]);
  }

  const clientOf = (path: string) => (path.startsWith('/admin/') ? admin : partner);
  const queryString = (values: Record<string, unknown>) => {
    const entries = Object.entries(values).filter(([, value]) => value !== undefined);
    return entries.length ? `?${new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)])).toString()}` : '';
  };
  /** What the document says in words and not in the schema: a schedule's end after its start. */
  const saysInWords = (body: any) =>
    body?.campaign?.schedule?.end_at === undefined || Date.parse(body.campaign.schedule.end_at) > Date.parse(body.campaign.schedule.start_at);

  const querySchema = (op: Operation): Schema => ({
    type: 'object',
    properties: Object.fromEntries(op.query.map((q) => [q.name, q.schema])),
    required: op.query.filter((q) => q.required).map((q) => q.name),
    additionalProperties: false,
  });

  it('finds the operations to judge', () => {
    const names = operations().map((op) => `${op.method} ${op.path}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'POST /v1/campaigns',
        'POST /v1/webhooks',
        'PATCH /v1/webhooks/{id}',
        'POST /v1/connections',
        'GET /v1/dispatches',
        'POST /admin/v1/accounts',
      ]),
    );
  });

  it('takes every request the document says is valid', async () => {
    const refusals: string[] = [];
    for (const op of operations()) {
      const arbitrary = fc.record({
        body: op.body ? validValue(document, check, op.body).filter(saysInWords) : fc.constant(undefined),
        query: op.query.length ? validValue(document, check, querySchema(op)) : fc.constant({}),
      });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ body, query }) => {
          const path = pathOf(op.path) + queryString(query as Record<string, unknown>);
          const answer = await clientOf(op.path).call(op.method, path, body);
          const code = answer.body?.error?.code;
          if (answer.status >= 500 || (answer.status === 400 && SHAPE_CODES.has(code))) {
            refusals.push(`${op.method} ${path} ${JSON.stringify(body)} → ${answer.status} ${code}: ${answer.body?.error?.message}`);
          }
          // Endpoints made here are deleted again: an account keeps at most 50.
          if (op.method === 'POST' && op.path === '/v1/webhooks' && answer.status === 200) await partner.delete(`/v1/webhooks/${answer.body.data.id}`);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    }
    expect(refusals).toEqual([]);
  }, 300_000);

  it('refuses every request the document says is invalid, with 400', async () => {
    const taken: string[] = [];
    for (const op of operations()) {
      const valid = fc.record({
        body: op.body ? validValue(document, check, op.body).filter(saysInWords) : fc.constant(undefined),
        query: op.query.length ? validValue(document, check, querySchema(op)) : fc.constant({}),
      });
      const broken = valid.chain(({ body, query }) =>
        op.body && op.query.length === 0
          ? brokenValue(document, check, op.body, body).map((b) => ({ body: b.value, query, how: b.how }))
          : brokenValue(document, check, querySchema(op), query).map((q) => ({ body, query: q.value, how: `query ${q.how}` })),
      );
      await fc.assert(
        fc.asyncProperty(broken, async ({ body, query, how }) => {
          const path = pathOf(op.path) + (typeof query === 'object' && query !== null ? queryString(query as Record<string, unknown>) : '?not-a-query');
          const answer = await clientOf(op.path).call(op.method, path, body);
          if (answer.status !== 400) taken.push(`${op.method} ${path} ${how} ${JSON.stringify(body)} → ${answer.status}`);
          if (op.method === 'POST' && op.path === '/v1/webhooks' && answer.status === 200) await partner.delete(`/v1/webhooks/${answer.body.data.id}`);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    }
    expect(taken).toEqual([]);
  }, 300_000);
});
