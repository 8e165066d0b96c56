/**
 * A valid launch at exactly `POST /v1/campaigns` is answered by the gateway's own way in
 * (LaunchRoute), the rest by Nest's route for the same controller (`/v1/campaigns/` reaches it
 * too). A partner cannot tell which: the same status, headers and envelope, the same replays and
 * the same errors, against the standalone process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const SHORTCUT = '/v1/campaigns';
const ROUTE = '/v1/campaigns/';

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** What differs between two answers by nature: ids, times, request ids, the key sent and the budget left. */
const VARYING = /"(id|request_id|created_at|updated_at|idempotency_key)":("[^"]*"|null)/g;
const comparable = ({ status, headers, text }: Answer) => ({
  status,
  headers: Object.fromEntries(
    Object.entries(headers)
      .filter(([name]) => !['date', 'x-request-id', 'ratelimit-remaining', 'ratelimit-reset'].includes(name))
      .map(([name, value]) => [name, name === 'content-length' ? 'n' : value]),
  ),
  text: text.replace(VARYING, '"$1":"…"'),
});

describe('POST /v1/campaigns: the gateway’s way in answers as the Nest route does', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let key: string;

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const response = await fetch(service.url + path, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-launch-route-'));
    service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: join(dataDir, 'service') });
    key = (await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN), 'Acme')).testKey;
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('accepts a launch with the same answer, and replays each byte for byte', async () => {
    const shortcut = await post(SHORTCUT, sandboxCampaign('Same'), { 'Idempotency-Key': 'way-in-1' });
    const route = await post(ROUTE, sandboxCampaign('Same'), { 'Idempotency-Key': 'way-in-2' });
    expect(shortcut.status).toBe(200);
    expect(comparable(shortcut)).toEqual(comparable(route));
    expect(JSON.parse(shortcut.text).data.idempotency_key).toBe('way-in-1');

    for (const [path, first, idempotencyKey] of [
      [SHORTCUT, shortcut, 'way-in-1'],
      [ROUTE, route, 'way-in-2'],
    ] as const) {
      const replay = await post(path, sandboxCampaign('Same'), { 'Idempotency-Key': idempotencyKey });
      expect(replay.text).toBe(first.text);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.headers['x-request-id']).toBe(first.headers['x-request-id']);
    }
    // The same key with another body, either way: 409, worded alike.
    const reused = await Promise.all([SHORTCUT, ROUTE].map((path) => post(path, sandboxCampaign('Other'), { 'Idempotency-Key': 'way-in-1' })));
    expect(reused[0].status).toBe(409);
    expect(comparable(reused[0])).toEqual(comparable(reused[1]));
  });

  it('refuses alike: a missing or wrong key, a bad Idempotency-Key, a body the rules refuse', async () => {
    const lifetimeWithoutEnd = sandboxCampaign();
    lifetimeWithoutEnd.campaign.budget.type = 'lifetime';
    const cases: Array<[string, unknown, Record<string, string>, number]> = [
      ['no key', sandboxCampaign(), { Authorization: '' }, 401],
      ['a wrong key', sandboxCampaign(), { Authorization: 'Bearer mk_test_nope' }, 401],
      ['a bad Idempotency-Key', sandboxCampaign(), { 'Idempotency-Key': 'ü' }, 400],
      ['a lifetime budget without end_at', lifetimeWithoutEnd, {}, 400],
    ];
    for (const [, body, headers, status] of cases) {
      const [shortcut, route] = await Promise.all([post(SHORTCUT, body, headers), post(ROUTE, body, headers)]);
      expect(shortcut.status).toBe(status);
      expect(comparable(shortcut)).toEqual(comparable(route));
    }
  });

  it('refuses alike what the body reader and the service refuse: not JSON, and a launch without credits (402, its key kept)', async () => {
    const raw = async (path: string, text: string) => {
      const response = await fetch(service.url + path, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: text,
      });
      return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() } as Answer;
    };
    const [shortcut, route] = await Promise.all([raw(SHORTCUT, '{"channel":'), raw(ROUTE, '{"channel":')]);
    expect(shortcut.status).toBe(400);
    expect(comparable(shortcut)).toEqual(comparable(route));

    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    const broke = await admin.post('/admin/v1/accounts', { name: 'Broke', credits: 0 });
    const brokeKey = (await admin.post(`/admin/v1/accounts/${broke.body.data.id}/keys`, { mode: 'test' })).body.data.key as string;
    const refused = await Promise.all(
      [SHORTCUT, ROUTE].map((path, i) => post(path, sandboxCampaign('Broke'), { Authorization: `Bearer ${brokeKey}`, 'Idempotency-Key': `broke-${i}` })),
    );
    expect(refused[0].status).toBe(402);
    expect(comparable(refused[0])).toEqual(comparable(refused[1]));
    // Kept for its key, as every business outcome is: the same answer again, replayed.
    const again = await post(SHORTCUT, sandboxCampaign('Broke'), { Authorization: `Bearer ${brokeKey}`, 'Idempotency-Key': 'broke-0' });
    expect(again.text).toBe(refused[0].text);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});

describe('POST /v1/campaigns over the rate limit: the gateway’s way in answers as the Nest route does', () => {
  let dataDir: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-launch-route-limit-'));
    service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: join(dataDir, 'service'), RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' });
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 429 alike, with the same headers, once the key’s budget is spent', async () => {
    const key = (await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN), 'Busy')).testKey;
    const post = async (path: string): Promise<Answer> => {
      const response = await fetch(service.url + path, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(sandboxCampaign('Busy')),
      });
      return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
    };
    // A launch the way in hands on (a body the rules refuse) spends one of the budget, as any request does.
    const refusedBody = await fetch(service.url + SHORTCUT, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...sandboxCampaign('Busy'), channel: 'myspace_ads' }),
    });
    expect([refusedBody.status, refusedBody.headers.get('ratelimit-remaining')]).toEqual([400, '2']);
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++) answers.push(await post(i % 2 === 0 ? SHORTCUT : ROUTE));
    const limited = answers.filter((answer) => answer.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(2);
    // One of each way in among them: a shortcut's and a route's 429 compared.
    const byPath = [0, 1].map((parity) => answers.find((answer, i) => answer.status === 429 && i % 2 === parity));
    expect(byPath.every(Boolean)).toBe(true);
    expect(comparable(byPath[0]!)).toEqual(comparable(byPath[1]!));
    expect(byPath[0]!.headers['retry-after']).toMatch(/^\d+$/);
  });
});
