import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@campaign-ops/service-runtime';
import { RateLimiter, rateLimitedError, rateLimitHeaders, TokenBuckets } from './rate-limit';

/** A clock the test moves by hand (milliseconds). */
function fakeClock(start = 1_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

describe('TokenBuckets', () => {
  it('lets a full burst through at once, then refuses with Retry-After', () => {
    const clock = fakeClock();
    const buckets = new TokenBuckets({ perSecond: 100, burst: 200 }, clock.now);
    for (let i = 0; i < 200; i++) expect(buckets.take('k').allowed).toBe(true);
    const refused = buckets.take('k');
    expect(refused).toEqual({ allowed: false, limit: 100, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1 });
  });

  it('announces the limit, the whole tokens left and the seconds until full', () => {
    const clock = fakeClock();
    const buckets = new TokenBuckets({ perSecond: 5, burst: 5 }, clock.now);
    expect(buckets.take('k')).toEqual({ allowed: true, limit: 5, remaining: 4, resetSeconds: 1, retryAfterSeconds: 0 });
    for (let i = 0; i < 4; i++) buckets.take('k');
    const sixth = buckets.take('k');
    expect(sixth).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 });
    // refills at 5 a second: after 200 ms there is one token again
    clock.advance(199);
    expect(buckets.take('k').allowed).toBe(false);
    clock.advance(1);
    expect(buckets.take('k')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('refills up to the burst and never beyond', () => {
    const clock = fakeClock();
    const buckets = new TokenBuckets({ perSecond: 10, burst: 20 }, clock.now);
    for (let i = 0; i < 20; i++) buckets.take('k');
    clock.advance(60_000);
    expect(buckets.take('k')).toMatchObject({ allowed: true, remaining: 19, resetSeconds: 1 });
    expect(new Array(19).fill(0).every(() => buckets.take('k').allowed)).toBe(true);
    expect(buckets.take('k').allowed).toBe(false);
  });

  it('Retry-After waits long enough at slow rates, and is never below 1', () => {
    const clock = fakeClock();
    const slow = new TokenBuckets({ perSecond: 1, burst: 1 }, clock.now);
    slow.take('k');
    expect(slow.take('k')).toMatchObject({ allowed: false, retryAfterSeconds: 1, resetSeconds: 1 });
    const fast = new TokenBuckets({ perSecond: 1000, burst: 1 }, clock.now);
    fast.take('k');
    expect(fast.take('k')).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    clock.advance(300);
    const veryslow = new TokenBuckets({ perSecond: 1, burst: 3 }, clock.now);
    for (let i = 0; i < 3; i++) veryslow.take('k');
    clock.advance(500);
    expect(veryslow.take('k')).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, resetSeconds: 3 });
  });

  it('keeps a bucket per id', () => {
    const clock = fakeClock();
    const buckets = new TokenBuckets({ perSecond: 1, burst: 2 }, clock.now);
    buckets.take('a');
    buckets.take('a');
    expect(buckets.take('a').allowed).toBe(false);
    expect(buckets.take('b')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('drops buckets that have refilled completely, so idle callers cost no memory', () => {
    const clock = fakeClock();
    const buckets = new TokenBuckets({ perSecond: 10, burst: 10 }, clock.now);
    for (let i = 0; i < 100; i++) buckets.take(`caller-${i}`);
    expect(buckets.size).toBe(100);
    clock.advance(1_000); // 0.1 s for one token: all are full again
    for (let i = 0; i < 30; i++) buckets.take('busy');
    expect(buckets.size).toBeLessThan(100);
    for (let i = 0; i < 100; i++) buckets.take('busy');
    expect(buckets.size).toBe(1);
  });

  it('never keeps more than maxBuckets, dropping the least recently used', () => {
    const clock = fakeClock();
    const buckets = new TokenBuckets({ perSecond: 1, burst: 3, maxBuckets: 10 }, clock.now);
    for (let i = 0; i < 1000; i++) buckets.take(`caller-${i}`);
    expect(buckets.size).toBe(10);
    // a recently used bucket stays (its level is kept)
    for (let i = 0; i < 3; i++) buckets.take('hot');
    for (let i = 0; i < 5; i++) {
      buckets.take('hot');
      buckets.take(`other-${i}`);
    }
    expect(buckets.take('hot').allowed).toBe(false);
  });

  it('refuses a configuration without a rate or a bucket', () => {
    expect(() => new TokenBuckets({ perSecond: 0, burst: 10 })).toThrow(RangeError);
    expect(() => new TokenBuckets({ perSecond: 10, burst: 0 })).toThrow(RangeError);
  });
});

describe('RateLimiter', () => {
  it('counts API keys, the admin token and client addresses in separate buckets', () => {
    const clock = fakeClock();
    const limiter = new RateLimiter({ perSecond: 1, burst: 1 }, clock.now);
    expect(limiter.take({ kind: 'key', keyId: 'key_1' }).allowed).toBe(true);
    expect(limiter.take({ kind: 'key', keyId: 'key_1' }).allowed).toBe(false);
    expect(limiter.take({ kind: 'key', keyId: 'key_2' }).allowed).toBe(true);
    expect(limiter.take({ kind: 'admin' }).allowed).toBe(true);
    expect(limiter.take({ kind: 'ip', ip: '127.0.0.1' }).allowed).toBe(true);
    expect(limiter.take({ kind: 'ip', ip: '127.0.0.1' }).allowed).toBe(false);
    // an address that looks like a key id is still another bucket
    expect(limiter.take({ kind: 'ip', ip: 'key:key_2' }).allowed).toBe(true);
  });

  it('turns decisions into the three headers and a 429 with Retry-After', () => {
    const decision = { allowed: false, limit: 100, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1 };
    expect(rateLimitHeaders(decision)).toEqual({ 'RateLimit-Limit': '100', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '2' });
    const error = rateLimitedError(decision);
    expect([error.status, error.type, error.code, error.headers]).toEqual([429, 'rate_limit_error', 'rate_limited', { 'Retry-After': '1' }]);
  });
});

describe('rate limit configuration', () => {
  let dataDir: string;
  beforeAll(() => (dataDir = mkdtempSync(join(tmpdir(), 'rate-limit-config-'))));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('defaults to 100 a second with a burst of 200', () => {
    expect(loadConfig('api-gateway', { DATA_DIR: dataDir, IDEMPOTENCY_SECRET_KEY: 'f'.repeat(64) }).rateLimit).toEqual({ perSecond: 100, burst: 200 });
  });

  it('reads RATE_LIMIT_PER_SECOND and RATE_LIMIT_BURST', () => {
    expect(
      loadConfig('api-gateway', { DATA_DIR: dataDir, IDEMPOTENCY_SECRET_KEY: 'f'.repeat(64), RATE_LIMIT_PER_SECOND: '5', RATE_LIMIT_BURST: '7' }).rateLimit,
    ).toEqual({ perSecond: 5, burst: 7 });
  });

  it('stops on a value that is not a positive whole number, naming the variable', () => {
    expect(() => loadConfig('api-gateway', { DATA_DIR: dataDir, IDEMPOTENCY_SECRET_KEY: 'f'.repeat(64), RATE_LIMIT_PER_SECOND: '0' })).toThrow(
      /RATE_LIMIT_PER_SECOND/,
    );
    expect(() => loadConfig('api-gateway', { DATA_DIR: dataDir, IDEMPOTENCY_SECRET_KEY: 'f'.repeat(64), RATE_LIMIT_BURST: 'lots' })).toThrow(
      /RATE_LIMIT_BURST/,
    );
    expect(() => loadConfig('api-gateway', { DATA_DIR: dataDir })).toThrow(/IDEMPOTENCY_SECRET_KEY is required/);
  });
});
