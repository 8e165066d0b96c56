import { ApiError } from '@campaign-ops/api-errors';

/**
 * Rate limits (docs/api.md#keys-and-modes): a token bucket per caller. A bucket holds at most `burst` tokens,
 * refills at `perSecond` tokens a second, and every request takes one; an empty bucket answers
 * 429 `rate_limited` with `Retry-After`.
 *
 * The buckets live in the memory of one gateway process, so the limit applies per replica: with N
 * gateway replicas behind a balancer a key may reach up to N times the configured rate. That is
 * the accepted trade-off for a check that costs no round trip; a shared store would be needed for
 * an exact global limit.
 */
export interface RateLimitOptions {
  /** Refill rate, tokens per second; also what `RateLimit-Limit` announces. */
  perSecond: number;
  /** Bucket size: how many requests may come at once after a quiet period. */
  burst: number;
  /** At most this many buckets are kept; the least recently used go first. Default 100 000. */
  maxBuckets?: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** `RateLimit-Limit`: the per-second rate. */
  limit: number;
  /** `RateLimit-Remaining`: whole tokens left after this request. */
  remaining: number;
  /** `RateLimit-Reset`: whole seconds until the bucket is full again (0 when it is). */
  resetSeconds: number;
  /** `Retry-After` of a refused request: whole seconds (at least 1) until a token is there; 0 when allowed. */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  /** Clock reading (ms) when `tokens` was computed. */
  at: number;
}

/** Monotonic milliseconds: wall-clock jumps neither drain nor fill buckets. */
const monotonicMs = (): number => performance.now();

/**
 * Token buckets by id, bounded: a bucket that has refilled completely is the same as no bucket,
 * so idle ones are dropped as the map is used (oldest use first), and beyond `maxBuckets` the
 * least recently used bucket is dropped whatever its level.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  private readonly maxBuckets: number;

  constructor(
    private readonly options: RateLimitOptions,
    private readonly now: () => number = monotonicMs,
  ) {
    if (!(options.perSecond > 0) || !(options.burst >= 1)) throw new RangeError('a rate limit needs perSecond > 0 and burst >= 1');
    this.perMs = options.perSecond / 1000;
    this.maxBuckets = options.maxBuckets ?? 100_000;
  }

  /** Takes one token from `id`'s bucket if there is one, and says what the headers should announce. */
  take(id: string): RateLimitDecision {
    const now = this.now();
    const { burst, perSecond } = this.options;
    let bucket = this.buckets.get(id);
    if (bucket) {
      this.buckets.delete(id);
      bucket.tokens = this.level(bucket, now);
      bucket.at = now;
    } else {
      bucket = { tokens: burst, at: now };
    }
    // Re-inserted last: the map's order is the order of last use.
    this.buckets.set(id, bucket);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.evict(now);
    return {
      allowed,
      limit: perSecond,
      remaining: Math.max(0, Math.floor(bucket.tokens)),
      resetSeconds: Math.max(0, Math.ceil((burst - bucket.tokens) / perSecond)),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)),
    };
  }

  /** How many buckets are kept (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }

  private level(bucket: Bucket, now: number): number {
    return Math.min(this.options.burst, bucket.tokens + Math.max(0, now - bucket.at) * this.perMs);
  }

  private evict(now: number): void {
    // A few of the least recently used: dropped if they are full again (nothing is lost).
    for (let checked = 0; checked < 4; checked++) {
      const oldest = this.buckets.entries().next();
      if (oldest.done || this.level(oldest.value[1], now) < this.options.burst) break;
      this.buckets.delete(oldest.value[0]);
    }
    // The hard bound: the least recently used goes, even if not full (it starts full if it comes back).
    while (this.buckets.size > this.maxBuckets) {
      const oldest = this.buckets.keys().next();
      if (oldest.done) break;
      this.buckets.delete(oldest.value);
    }
  }
}

/** The header values of a decision (`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`). */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': String(decision.remaining),
    'RateLimit-Reset': String(decision.resetSeconds),
  };
}

/** The 429 of a refused decision, with `Retry-After`. */
export function rateLimitedError(decision: RateLimitDecision): ApiError {
  const seconds = Math.max(1, decision.retryAfterSeconds);
  return new ApiError(
    'rate_limited',
    `Too many requests: the limit is ${decision.limit} requests per second; retry after ${seconds} second${seconds === 1 ? '' : 's'}.`,
    undefined,
    { 'Retry-After': String(seconds) },
  );
}

/**
 * The gateway's limiter: one bucket per API key (`key:<key id>`), one for the operators' admin
 * token, one per client IP for everything without a valid credential (401s, unknown routes), and
 * one per client IP for the OAuth callback, all with the configured rate and burst. Separate maps,
 * so that IP buckets can never push key buckets out, and traffic to any other path never spends
 * the budget of people coming back from a consent page.
 */
export class RateLimiter {
  private readonly byCredential: TokenBuckets;
  private readonly byClientIp: TokenBuckets;
  private readonly byCallbackIp: TokenBuckets;

  constructor(options: RateLimitOptions, now?: () => number) {
    this.byCredential = new TokenBuckets(options, now);
    this.byClientIp = new TokenBuckets(options, now);
    this.byCallbackIp = new TokenBuckets(options, now);
  }

  take(identity: RateLimitIdentity): RateLimitDecision {
    switch (identity.kind) {
      case 'key':
        return this.byCredential.take(`key:${identity.keyId}`);
      case 'admin':
        return this.byCredential.take('admin');
      case 'ip':
        return this.byClientIp.take(identity.ip);
      case 'callback':
        return this.byCallbackIp.take(identity.ip);
    }
  }
}

/** `callback`: a person's browser back from a consent page, with a budget of its own per address (docs/api.md#keys-and-modes). */
export type RateLimitIdentity = { kind: 'key'; keyId: string } | { kind: 'admin' } | { kind: 'ip'; ip: string } | { kind: 'callback'; ip: string };
