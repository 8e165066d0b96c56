import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Response } from 'express';
import { AccountDirectory } from '@campaign-ops/accounts';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { AdminTokenGuard, authenticateOnce, bearer } from './auth.guards';
import { RateLimitDecision, RateLimiter, rateLimitedError, rateLimitHeaders, RateLimitIdentity } from './rate-limit';
import { AnswerHeaders, GatewayRequest } from './request-context';
import { ApiDocument } from '../openapi/api-document';

/** Probes of orchestrators: never limited, so a flood cannot fail a readiness check. (Metrics are on METRICS_PORT.) */
const UNLIMITED_PATHS = new Set(['/healthz', '/readyz']);
/** People's browsers back from consent pages: a budget of their own per address, so no flood elsewhere turns them away. */
const OAUTH_CALLBACK_PATH = '/v1/connections/oauth/callback';

/**
 * The rate limit of every request (docs/api.md#keys-and-modes), checked right after authentication and before the
 * body is read, so a refused request costs neither the body nor any work (and never reaches the
 * idempotency store). Every answer carries `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset`; over the limit it is 429 `rate_limited` with `Retry-After`.
 *
 * Who is counted: a valid API key on an existing route counts against that key, the admin token
 * against the operators' bucket; everything else (no key, a wrong or revoked key, unknown routes)
 * against the client's IP address (the socket's peer, or behind the proxies of TRUST_PROXY the
 * address they report); the OAuth callback against a budget of its own per address.
 * The key lookup is shared with ApiKeyGuard, so it happens once per request.
 */
@Injectable()
export class RateLimitMiddleware {
  private readonly limiter: RateLimiter;

  constructor(
    @Inject(CONFIG) config: ServiceConfig,
    private readonly directory: AccountDirectory,
    private readonly admin: AdminTokenGuard,
    private readonly routes: ApiDocument,
  ) {
    this.limiter = new RateLimiter(config.rateLimit);
  }

  /** The express middleware (bound, for `app.use`). */
  readonly handle = (request: GatewayRequest, response: Response, next: NextFunction): void => {
    // Taken already by the launch's way in (LaunchFastPath), which set the headers.
    if (request.rateLimitTaken) return next(request.rateLimitTaken.allowed ? undefined : rateLimitedError(request.rateLimitTaken));
    if (UNLIMITED_PATHS.has(request.path)) return next();
    this.identify(request).then((identity) => {
      const decision = this.limiter.take(identity);
      for (const [name, value] of Object.entries(rateLimitHeaders(decision))) response.setHeader(name, value);
      next(decision.allowed ? undefined : rateLimitedError(decision));
    }, next);
  };

  /** The limit of a valid API key, taken for a request the launch's way in answers: its headers on the answer. */
  takeForKey(request: GatewayRequest, response: AnswerHeaders, keyId: string): RateLimitDecision {
    const decision = this.limiter.take({ kind: 'key', keyId });
    for (const [name, value] of Object.entries(rateLimitHeaders(decision))) response.setHeader(name, value);
    request.rateLimitTaken = decision;
    return decision;
  }

  private async identify(request: GatewayRequest): Promise<RateLimitIdentity> {
    // request.ip: the client as TRUST_PROXY's proxies report it, else the socket's peer.
    const ip = request.ip ?? request.socket.remoteAddress ?? 'unknown';
    if (request.path === OAUTH_CALLBACK_PATH) return { kind: 'callback', ip };
    const byIp: RateLimitIdentity = { kind: 'ip', ip };
    const token = bearer(request);
    if (!token) return byIp;
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    if (!this.routes.allowedMethods(request.path).includes(method)) return byIp;
    if (request.path.startsWith('/admin/')) return this.admin.accepts(token) ? { kind: 'admin' } : byIp;
    try {
      const found = await authenticateOnce(this.directory, request, token);
      return found.ok ? { kind: 'key', keyId: found.keyId } : byIp;
    } catch {
      // The store cannot answer: ApiKeyGuard reports that; the request counts against its address.
      return byIp;
    }
  }
}
