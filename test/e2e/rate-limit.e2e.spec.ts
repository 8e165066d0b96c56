/**
 * Rate limits (API.md §2) against the standalone process started with a small limit
 * (5 requests a second, burst 5): the headers on every answer, 429 with Retry-After past the
 * limit, a bucket per key, and one per client address for requests without a valid key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiAnswer, openAccountWithKeys, PartnerClient } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

function expectRateLimitHeaders(answer: ApiAnswer, limit = 5): void {
  expect(answer.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(answer.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
  expect(answer.headers.get('ratelimit-reset')).toMatch(/^\d+$/);
  expect(Number(answer.headers.get('ratelimit-remaining'))).toBeLessThanOrEqual(5);
}

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
      RATE_LIMIT_PER_SECOND: '5',
      RATE_LIMIT_BURST: '5',
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    anonymous = new PartnerClient(service.url);
    keys = await openAccountWithKeys(admin, 'Rate Limited Inc'); // 3 admin requests
    await new Promise((r) => setTimeout(r, 1_100)); // every bucket full again
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 429 rate_limited with Retry-After to the 6th quick request of a key, and carries the headers throughout', async () => {
    const partner = anonymous.as(keys.testKey);
    const first = await partner.get('/v1/account');
    expect(first.status).toBe(200);
    expectRateLimitHeaders(first);
    expect(first.headers.get('ratelimit-remaining')).toBe('4');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);

    // 4 tokens left: of 6 more quick requests at least the 6th overall is refused (a slow machine may
    // refill one token while they run)
    const more = await Promise.all(Array.from({ length: 6 }, () => partner.get('/v1/account')));
    const limited = more.filter((a) => a.status === 429);
    expect(more.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(4);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited.length + more.filter((a) => a.status === 200).length).toBe(6);
    const [refused] = limited;
    expect(refused.body).toEqual({
      success: false,
      error: { type: 'rate_limit_error', code: 'rate_limited', message: expect.any(String) },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expectRateLimitHeaders(refused);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-request-id')).toBe(refused.body.request_id);
    for (const answer of more) expectRateLimitHeaders(answer);

    // a key's bucket is its own: the account's live key still has its whole burst
    const live = await anonymous.as(keys.liveKey).get('/v1/account');
    expect(live.status).toBe(200);
    expect(live.headers.get('ratelimit-remaining')).toBe('4');

    // and it refills: after Retry-After the key is served again
    await new Promise((r) => setTimeout(r, Number(refused.headers.get('retry-after')) * 1000 + 100));
    const after = await partner.get('/v1/account');
    expect(after.status).toBe(200);
    expectRateLimitHeaders(after);
  });

  it('refuses a launch past the limit before any work: no dispatch, and its Idempotency-Key stays unused', async () => {
    await new Promise((r) => setTimeout(r, 1_100));
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
    // Empty the bucket with cheap reads, then launch at once; a slow machine may refill a token in
    // between, so try a few times.
    let refused: ApiAnswer | undefined;
    let refusedKey = '';
    let accepted = 0;
    for (let attempt = 0; attempt < 5 && !refused; attempt++) {
      for (let i = 0; i < 20 && (await partner.get('/v1/account')).status !== 429; i++);
      const launch = await partner.post('/v1/campaigns', campaign, { 'Idempotency-Key': `throttled-${attempt}` });
      if (launch.status === 429) [refused, refusedKey] = [launch, `throttled-${attempt}`];
      else if (launch.status === 200) accepted++;
    }
    expect(refused).toBeDefined();
    expect(refused!.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expectRateLimitHeaders(refused!);
    await new Promise((r) => setTimeout(r, 1_100));
    const list = await partner.get('/v1/dispatches?limit=100');
    expect(list.body.data.filter((d: { campaign: { name: string } }) => d.campaign.name === 'Throttled')).toHaveLength(accepted);
    // the refused request left no trace under its key: the same request now runs (neither replay nor in use)
    const retried = await partner.post('/v1/campaigns', campaign, { 'Idempotency-Key': refusedKey });
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('carries the headers on 401 and 404 answers, counted per client address', async () => {
    await new Promise((r) => setTimeout(r, 1_100));
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

    // the address's bucket runs out like a key's, and the key is unaffected
    // 2 tokens left for this address
    const more = await Promise.all(Array.from({ length: 4 }, () => anonymous.get('/v1/account')));
    expect(more.every((a) => a.status === 401 || a.status === 429)).toBe(true);
    const limited = more.find((a) => a.status === 429)!;
    expect(limited).toBeDefined();
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    const partner = await anonymous.as(keys.testKey).get('/v1/account');
    expect(partner.status).toBe(200);
  });

  it('carries the headers on Admin API answers', async () => {
    const answer = await admin.post('/admin/v1/accounts', { name: 'Counted' });
    expect(answer.status).toBe(200);
    expectRateLimitHeaders(answer);
  });
});
