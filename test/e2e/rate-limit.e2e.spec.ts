/**
 * Rate limits (docs/api.md#keys-and-modes) against the standalone process started with a small limit
 * (1 request a second, burst 5): the headers on every answer, 429 with Retry-After past the
 * limit, a bucket per key, and one per client address for requests without a valid key.
 *
 * At one token a second, how fast this machine sends requests barely matters, and where it could
 * the tests bound what they expect by the time that really went by. Each test uses buckets whose
 * level it knows (a new key's starts full) instead of waiting for refills.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiAnswer, eventually, openAccountWithKeys, PartnerClient } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const PER_SECOND = 1;
const BURST = 5;

function expectRateLimitHeaders(answer: ApiAnswer): void {
  expect(answer.headers.get('ratelimit-limit')).toBe(String(PER_SECOND));
  expect(answer.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
  expect(answer.headers.get('ratelimit-reset')).toMatch(/^\d+$/);
  expect(Number(answer.headers.get('ratelimit-remaining'))).toBeLessThanOrEqual(BURST);
}

/** What a bucket held: `tokens` left by requests sent from `since` (Date.now() before the first). */
interface BucketLevel {
  tokens: number;
  since: number;
}

/**
 * Sends one request after another until one is refused. From a known level the bucket serves at
 * least `tokens`, and at most that plus what refilled since (PER_SECOND a second).
 */
async function sendUntilRefused(send: () => Promise<ApiAnswer>, level?: BucketLevel): Promise<{ served: ApiAnswer[]; refused: ApiAnswer }> {
  const served: ApiAnswer[] = [];
  for (;;) {
    const answer = await send();
    if (answer.status === 429) {
      if (level) {
        expect(served.length).toBeGreaterThanOrEqual(level.tokens);
        expect(served.length).toBeLessThanOrEqual(level.tokens + Math.floor(((Date.now() - level.since) / 1000) * PER_SECOND));
      }
      return { served, refused: answer };
    }
    served.push(answer);
    if (served.length > BURST + 100) throw new Error(`${served.length} requests served in a row: the limit is not enforced`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('rate limits, against the standalone service', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let admin: PartnerClient;
  let anonymous: PartnerClient;
  let keys: Awaited<ReturnType<typeof openAccountWithKeys>>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-rate-limit-'));
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: join(dataDir, 'service'),
      RATE_LIMIT_PER_SECOND: String(PER_SECOND),
      RATE_LIMIT_BURST: String(BURST),
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    anonymous = new PartnerClient(service.url);
    keys = await openAccountWithKeys(admin, 'Rate Limited Inc'); // 3 of the admin bucket's 5
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 429 rate_limited with Retry-After once a key’s burst is spent, and carries the headers throughout', async () => {
    const partner = anonymous.as(keys.testKey);
    const since = Date.now();
    const first = await partner.get('/v1/account');
    expect(first.status).toBe(200);
    expectRateLimitHeaders(first);
    expect(first.headers.get('ratelimit-remaining')).toBe('4');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);

    // 4 tokens left, then refused
    const { served, refused } = await sendUntilRefused(() => partner.get('/v1/account'), { tokens: 4, since });
    for (const answer of served) expect(answer.status).toBe(200);
    expect(refused.body).toEqual({
      success: false,
      error: { type: 'rate_limit_error', code: 'rate_limited', message: expect.any(String) },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expectRateLimitHeaders(refused);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-request-id')).toBe(refused.body.request_id);
    for (const answer of served) expectRateLimitHeaders(answer);

    // a key's bucket is its own: the account's live key still has its whole burst
    const live = await anonymous.as(keys.liveKey).get('/v1/account');
    expect(live.status).toBe(200);
    expect(live.headers.get('ratelimit-remaining')).toBe('4');

    // and it refills: once Retry-After has gone by, the key is served again (the wait is the
    // service's own figure; the margin only covers timers firing a few ms early)
    await sleep(Number(refused.headers.get('retry-after')) * 1000 + 20);
    const after = await partner.get('/v1/account');
    expect(after.status).toBe(200);
    expectRateLimitHeaders(after);
  });

  it('refuses a launch past the limit before any work: no dispatch, and its Idempotency-Key stays unused', async () => {
    const partner = anonymous.as(keys.testKey);
    const campaign = {
      channel: 'meta_ads',
      campaign: {
        name: 'Throttled',
        objective: 'conversion',
        budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
        schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
      },
    };
    // Empty the bucket with cheap reads, then launch at once: the bucket holds less than a token,
    // so the launch is refused unless a whole second went by in between; should one, try again.
    let refused: ApiAnswer | undefined;
    let refusedKey = '';
    let accepted = 0;
    for (let attempt = 0; attempt < 5 && !refused; attempt++) {
      await sendUntilRefused(() => partner.get('/v1/account'));
      const launch = await partner.post('/v1/campaigns', campaign, { 'Idempotency-Key': `throttled-${attempt}` });
      if (launch.status === 429) [refused, refusedKey] = [launch, `throttled-${attempt}`];
      else if (launch.status === 200) accepted++;
    }
    expect(refused).toBeDefined();
    expect(refused!.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expectRateLimitHeaders(refused!);
    // Refused requests take no token: ask until the bucket has one again.
    const list = await eventually(
      async () => {
        const answer = await partner.get('/v1/dispatches?limit=100');
        return answer.status !== 429 && answer;
      },
      10_000,
      'a token for the key',
    );
    expect(list.status).toBe(200);
    expect(list.body.data.filter((d: { campaign: { name: string } }) => d.campaign.name === 'Throttled')).toHaveLength(accepted);
    // the refused request left no trace under its key: the same request now runs (neither replay nor in use)
    const retried = await eventually(
      async () => {
        const answer = await partner.post('/v1/campaigns', campaign, { 'Idempotency-Key': refusedKey });
        return answer.status !== 429 && answer;
      },
      10_000,
      'a token for the key',
    );
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('carries the headers on 401 and 404 answers, counted per client address', async () => {
    // This address has sent nothing yet (the other tests use keys and the admin token): its bucket is full.
    const since = Date.now();
    const missing = await anonymous.get('/v1/account');
    expect(missing.status).toBe(401);
    expectRateLimitHeaders(missing);
    expect(missing.headers.get('ratelimit-remaining')).toBe('4');

    const invalid = await anonymous.as('mk_test_' + 'x'.repeat(40)).get('/v1/account');
    expect(invalid.status).toBe(401);
    expectRateLimitHeaders(invalid);

    const unknown = await anonymous.as(keys.testKey).get('/v1/no-such-thing');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('route_not_found');
    expectRateLimitHeaders(unknown);

    // the address's bucket runs out like a key's (2 tokens left), and a key is unaffected
    const { served, refused: limited } = await sendUntilRefused(() => anonymous.get('/v1/account'), { tokens: 2, since });
    for (const answer of served) expect(answer.status).toBe(401);
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    // (the live key: the test key's bucket is the one the other tests empty)
    const partner = await anonymous.as(keys.liveKey).get('/v1/account');
    expect(partner.status).toBe(200);
  });

  it('believes no X-Forwarded-For without TRUST_PROXY: a client cannot pick the address it is limited as, and the OAuth callback keeps a budget of its own', async () => {
    // This address's bucket is empty after the test above; another claimed address changes nothing.
    const spoofed = await anonymous.get('/v1/account', { 'X-Forwarded-For': '203.0.113.77' });
    expect([spoofed.status, spoofed.body.error?.code]).toEqual([429, 'rate_limited']);
    // A person coming back from a consent page is not turned away by that: 400 state_invalid, not 429.
    const back = await anonymous.get('/v1/connections/oauth/callback?state=never-issued&code=x');
    expect([back.status, back.body.error?.code]).toEqual([400, 'state_invalid']);
    expectRateLimitHeaders(back);
  });

  it('carries the headers on Admin API answers', async () => {
    const answer = await admin.post('/admin/v1/accounts', { name: 'Counted' });
    expect(answer.status).toBe(200);
    expectRateLimitHeaders(answer);
  });
});

describe('rate limits behind a proxy named in TRUST_PROXY', () => {
  let dataDir: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-trust-proxy-'));
    service = await ServiceProcess.start('standalone', {
      DATA_DIR: dataDir,
      RATE_LIMIT_PER_SECOND: String(PER_SECOND),
      RATE_LIMIT_BURST: String(BURST),
      TRUST_PROXY: '127.0.0.1/32,::1/128',
    });
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("limits each client the proxy reports on its own: one client's flood leaves the others, and the callback, their budgets", async () => {
    const anonymous = new PartnerClient(service.url);
    const from = (client: string) => ({ 'X-Forwarded-For': client });
    const { refused } = await sendUntilRefused(() => anonymous.get('/v1/account', from('198.51.100.1')));
    expect(refused.body.error.code).toBe('rate_limited');
    const other = await anonymous.get('/v1/account', from('198.51.100.2'));
    expect([other.status, other.headers.get('ratelimit-remaining')]).toEqual([401, String(BURST - 1)]);
    // The proxy's own header list: the client is the last address the trusted proxy appended.
    const chained = await anonymous.get('/v1/account', { 'X-Forwarded-For': '203.0.113.9, 198.51.100.1' });
    expect(chained.status).toBe(429);
    const back = await anonymous.get('/v1/connections/oauth/callback?state=never-issued&code=x', from('198.51.100.1'));
    expect([back.status, back.body.error?.code]).toEqual([400, 'state_invalid']);
  });
});
