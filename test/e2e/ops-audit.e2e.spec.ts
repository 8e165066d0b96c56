/**
 * The audit tools end to end: a standalone process runs a realistic mix of partner and admin
 * calls (accounts, keys, webhooks with a rotated secret and a failing receiver, a sandbox
 * connection, launches that complete, fail, retry and meet transient errors), then the ops
 * command line, as `npm run ops` runs it, exports, verifies, rebuilds and inspects its stores
 * while it keeps running.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createTestCertificates, PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { ops, runOps } from '../support/ops-cli';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-ops-audit-0123';
const PLANTED_TOKEN = 'EAAB-sandbox-PLANTED-TOKEN-7f3c9e1d';
const IDEMPOTENCY_KEY = 'idem-e2e-planted-4b2a';
/** The read models a rebuild makes (docs/operations.md, "Rebuild"). */
const REBUILT = ['accounts', 'api_keys', 'dispatches', 'credit_ledgers', 'connections', 'webhook_endpoints'];

/** The request id of a timeline's DispatchAccepted: what every delivery of its events carries. */
const accepted_request_id = (timeline: { entries: Array<{ what: string; request_id: string }> }) =>
  timeline.entries.find((entry) => entry.what === 'DispatchAccepted (revision 0)')!.request_id;

describe('ops export, verify, rebuild and inspect on a running standalone process', () => {
  let dataDir: string;
  let serviceDir: string;
  let service: ServiceProcess;
  let receiver: PartnerReceiver;
  let partner: PartnerClient;
  let keys: Awaited<ReturnType<typeof openAccountWithKeys>>;
  let secrets: string[];
  const dispatches: Record<string, string> = {};
  let connectionId: string;
  const env = () => ({ DATA_DIR: serviceDir });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-audit-'));
    serviceDir = join(dataDir, 'service');
    const certificates = await createTestCertificates(join(dataDir, 'tls'));
    receiver = await startPartnerReceiver({ tls: { key: certificates.key, cert: certificates.cert } });
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: serviceDir,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
      NODE_EXTRA_CA_CERTS: certificates.caCertPath,
    });
    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    keys = await openAccountWithKeys(admin, 'Acme Audit');
    const other = await openAccountWithKeys(admin, 'Other Media');
    partner = new PartnerClient(service.url, keys.testKey);

    // Webhooks: one endpoint whose secret is rotated (the receiver accepts both), one that is deleted.
    const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.accepted', 'dispatch.completed', 'dispatch.failed'] });
    const rotated = await partner.post(`/v1/webhooks/${endpoint.body.data.id}/rotate-secret`);
    const deleted = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.completed'] });
    await partner.delete(`/v1/webhooks/${deleted.body.data.id}`);
    secrets = [endpoint.body.data.signing_secret, rotated.body.data.signing_secret, deleted.body.data.signing_secret];
    for (const secret of secrets) expect(secret).toMatch(/^whsec_/);
    receiver.setSecret(secrets[0]);
    receiver.addSecret(secrets[1]);
    // The first deliveries meet a failing receiver, and are retried.
    receiver.failNext(2, 503);

    const connection = await partner.post('/v1/connections', {
      channel: 'meta_ads',
      provider_account_id: 'act_1001',
      credentials: { access_token: PLANTED_TOKEN },
    });
    expect(connection.status).toBe(200);
    connectionId = connection.body.data.id;

    const launch = async (name: string, headers: Record<string, string> = {}) => {
      const answer = await partner.post('/v1/campaigns', sandboxCampaign(name), headers);
      expect(answer.status).toBe(200);
      return answer.body.data.id as string;
    };
    dispatches.plain = await launch('Spring sale', { 'Idempotency-Key': IDEMPOTENCY_KEY });
    dispatches.transient = await launch('Flaky [sandbox:transient]');
    dispatches.failed = await launch('Broken [sandbox:fail]');
    for (let i = 0; i < 5; i++) await launch(`Batch ${i}`);
    await new PartnerClient(service.url, other.testKey).post('/v1/campaigns', sandboxCampaign('Other account'));
    await eventually(
      async () => (await partner.get(`/v1/dispatches/${dispatches.failed}`)).body.data?.status === 'failed',
      20_000,
      'the failing launch to fail',
    );
    expect((await partner.post(`/v1/dispatches/${dispatches.failed}/retry`)).status).toBe(200);
    await admin.post(`/admin/v1/accounts/${keys.accountId}/credits`, { mode: 'test', amount: 50 });
    await admin.delete(`/admin/v1/keys/${other.testKeyId}`);
    // Settled: every dispatch finished and its webhooks delivered.
    await eventually(
      async () => {
        const list = await partner.get('/v1/dispatches?limit=100');
        return list.body.data.length === 8 && list.body.data.every((d: { status: string }) => d.status !== 'accepted');
      },
      30_000,
      'every launch to finish',
    );
    await receiver.waitFor((event) => event.body.event === 'dispatch.completed', 30_000, 7);
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Every row of the rebuildable collections as stored (id, revision, the document's JSON text), by id. */
  function dump(): Record<string, unknown[]> {
    const db = new Database(join(serviceDir, 'read-models.sqlite'), { readonly: true });
    try {
      return Object.fromEntries(REBUILT.map((name) => [name, db.prepare(`SELECT id, revision, doc FROM "coll_${name}" ORDER BY id`).all()]));
    } finally {
      db.close();
    }
  }

  /** Changes one dispatch's document and deletes one API key in the live tables, as a bug or a hand edit would. */
  function damage(): { dispatch: string; key: string } {
    const db = new Database(join(serviceDir, 'read-models.sqlite'));
    try {
      db.pragma('busy_timeout = 5000');
      db.prepare(`UPDATE "coll_dispatches" SET doc = json_set(doc, '$.status', 'damaged') WHERE id = ?`).run(dispatches.plain);
      const key = (db.prepare('SELECT id FROM "coll_api_keys" ORDER BY id LIMIT 1').get() as { id: string }).id;
      db.prepare('DELETE FROM "coll_api_keys" WHERE id = ?').run(key);
      return { dispatch: dispatches.plain, key };
    } finally {
      db.close();
    }
  }

  it('rebuild --check finds nothing to change; rebuild --all replays into fresh read models equal byte for byte, swapped in while the service runs on', async () => {
    const check = await runOps(['rebuild', '--check', '--all', '--json'], env(), 60_000);
    expect(check.code).toBe(0);
    expect(check.json.differences).toEqual([]);
    const before = dump();
    expect(before.dispatches).toHaveLength(9);
    expect(before.connections).toHaveLength(1);
    expect(before.webhook_endpoints).toHaveLength(2);
    expect(before.api_keys).toHaveLength(4);

    // The live models damaged: --check names each difference and exits 1; the rebuild mends them.
    const damaged = damage();
    const found = await runOps(['rebuild', '--check', 'dispatches', 'accounts'], env(), 60_000);
    expect(found.code).toBe(1);
    expect(found.stdout).toContain(`dispatches ${damaged.dispatch}: differs`);
    expect(found.stdout).toMatch(/live: {4}\{.*"status":"damaged"/);
    expect(found.stdout).toContain(`api_keys ${damaged.key}: missing from live`);
    expect(found.stdout).toMatch(/^2 differences$/m);
    expect(dump()).not.toEqual(before);

    const rebuilt = await runOps(['rebuild', '--all', '--json'], env(), 60_000);

    expect(rebuilt.code).toBe(0);
    expect(rebuilt.json).toMatchObject({
      read_models: ['accounts', 'dispatches', 'credit_ledgers', 'connections', 'webhook_endpoints'],
      checkpoints: ['account-views', 'dispatch-views', 'webhook-endpoint-views'],
    });
    expect(dump()).toEqual(before);
    // Progress went to stderr as plain lines (not a terminal), the result alone to stdout.
    expect(rebuilt.stderr).toMatch(/^rebuild: 100% \d+ events \d+ events\/s$/m);
    // The running service reads the swapped-in models, and its projections write to them.
    expect((await partner.get(`/v1/dispatches/${dispatches.plain}`)).body.data).toMatchObject({ id: dispatches.plain, status: 'completed' });
    const after = (await partner.post('/v1/campaigns', sandboxCampaign('After the rebuild'))).body.data.id;
    await eventually(
      async () =>
        (await partner.get('/v1/dispatches?limit=100')).body.data.find((d: { id: string; status: string }) => d.id === after && d.status === 'completed'),
      20_000,
      'the launch after the rebuild in the list',
    );
    const again = await runOps(['rebuild', '--check', 'dispatches'], env(), 60_000);
    expect([again.code, again.stdout]).toEqual([0, expect.stringContaining('no differences')]);
  }, 180_000);

  it('exports everything and verifies it against the store; no token, secret, key or idempotency key is in it; a changed line is named', async () => {
    const file = join(dataDir, 'all.jsonl');
    const manifest = await ops(['export', '--out', file, '--json'], env());
    expect(manifest).toMatchObject({ count: expect.any(Number), final_hash: expect.stringMatching(/^[0-9a-f]{64}$/), filter: {} });
    const exported = readFileSync(file, 'utf8');
    expect(exported.trimEnd().split('\n')).toHaveLength(manifest.count);
    const events = new Database(join(serviceDir, 'events.sqlite'), { readonly: true });
    const sealed = (events.prepare("SELECT data FROM events WHERE type IN ('WebhookEndpointCreated', 'WebhookSecretRotated')").all() as { data: string }[]).map(
      (row) => JSON.parse(row.data).sealedSecret as string,
    );
    const keyHashes = (events.prepare("SELECT data FROM events WHERE type = 'ApiKeyIssued'").all() as { data: string }[]).map(
      (row) => JSON.parse(row.data).keyHash as string,
    );
    events.close();
    expect(sealed).toHaveLength(3);
    for (const secret of [...secrets, ...sealed, ...keyHashes, PLANTED_TOKEN, keys.testKey, keys.liveKey, IDEMPOTENCY_KEY])
      expect(exported).not.toContain(secret);
    expect(exported).toContain(connectionId);

    const verified = await runOps(['verify', file], env());
    expect([verified.code, verified.stdout]).toEqual([
      0,
      `${file}: ${manifest.count} lines, chain intact, the manifest matches, every line as in the event store, none missing from the manifest's selection ({} up to position ${manifest.read_up_to})\nfinal hash ${manifest.final_hash}\n`,
    ]);

    const lines = exported.split('\n');
    lines[4] = lines[4].replace('"revision":', '"revision": ');
    writeFileSync(file, lines.join('\n'));
    const tampered = await runOps(['verify', file], env());
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toContain(`${file}, line 5: `);

    const account = join(dataDir, 'account.jsonl');
    const byAccount = await ops(['export', '--out', account, '--account', keys.accountId, '--category', 'dispatch', '--json'], env());
    expect(byAccount.count).toBeGreaterThanOrEqual(8 * 2);
    expect(readFileSync(account, 'utf8')).not.toContain('Other account');
    expect(await ops(['verify', account, '--json'], env())).toMatchObject({ ok: true, checked_against_store: true });

    // One stream, named as stored or by its dispatch's id: the same events. A stream with none is refused (exit 2), not exported empty.
    const byStream = await ops(['export', '--out', join(dataDir, 'stream.jsonl'), '--stream', `dispatch-${dispatches.transient}`, '--json'], env());
    const byId = await ops(['export', '--out', join(dataDir, 'by-id.jsonl'), '--stream', dispatches.transient, '--json'], env());
    expect(byStream.count).toBeGreaterThanOrEqual(3);
    expect([byId.count, byId.final_hash, byId.filter]).toEqual([byStream.count, byStream.final_hash, byStream.filter]);
    const none = await runOps(['export', '--out', join(dataDir, 'none.jsonl'), '--stream', 'dispatch-dsp_01NOSUCHDISPATCH000000000000'], env());
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no events in stream dispatch-dsp_01NOSUCHDISPATCH000000000000');
  }, 60_000);

  it('inspect shows a dispatch’s events, provider attempts and webhook deliveries with times and request ids, and a connection’s', async () => {
    const timeline = await ops(['inspect', dispatches.transient, '--json'], env());
    expect(timeline.stream).toBe(`dispatch-${dispatches.transient}`);
    const kinds = timeline.entries.map((entry: { kind: string; what: string }) => `${entry.kind}: ${entry.what.replace(/ to whk_\w+/, '')}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'event: DispatchAccepted (revision 0)',
        'provider_attempt: attempt 1: failed, to be retried (provider_unavailable)',
        'provider_attempt: attempt 2: succeeded',
        expect.stringMatching(/^webhook_delivery: dispatch.accepted: succeeded after \d attempt\(s\) \(last 200\)$/),
        expect.stringMatching(/^webhook_delivery: dispatch.completed: succeeded after 1 attempt\(s\) \(last 200\)$/),
        expect.stringMatching(/^webhook_attempt: dispatch.completed, attempt 1: succeeded \(200\) in \d+ ms$/),
      ]),
    );
    // Each attempt of each delivery, with when it started, how long it took and how it ended.
    const attempts = timeline.entries.filter((entry: { kind: string }) => entry.kind === 'webhook_attempt');
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        request_id: accepted_request_id(timeline),
        details: { delivery_id: expect.stringMatching(/^\w+/), attempt: expect.any(Number), duration_ms: expect.any(Number), succeeded: expect.any(Boolean) },
      });
    }
    const accepted = timeline.entries.find((entry: { what: string }) => entry.what === 'DispatchAccepted (revision 0)');
    expect(accepted.request_id).toMatch(/^req_/);
    expect(accepted.at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const times = timeline.entries.map((entry: { at: string }) => entry.at);
    expect([...times].sort()).toEqual(times);

    const text = await runOps(['inspect', dispatches.failed], env());
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^dispatch-dsp_\w+ \(now failed\)$/m);
    expect(text.stdout).toMatch(/provider_attempt\s+attempt 1: failed \(provider_validation_failed\)/);
    expect(text.stdout).toMatch(/event\s+DispatchRetried \(revision 2\)\s+request req_/);

    const connection = await ops(['inspect', connectionId, '--json'], env());
    expect(connection.entries[0]).toMatchObject({ kind: 'event', what: 'ConnectionActivated (revision 0)', request_id: expect.stringMatching(/^req_/) });
    expect(JSON.stringify(connection)).not.toContain(PLANTED_TOKEN);
    const missing = await runOps(['inspect', 'dsp_01NOSUCHDISPATCH000000000000'], env());
    expect([missing.code, missing.stdout]).toEqual([1, 'no such dispatch or connection: dsp_01NOSUCHDISPATCH000000000000\n']);
  }, 60_000);
});
