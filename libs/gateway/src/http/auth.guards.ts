import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { timingSafeEqual, createHash } from 'node:crypto';
import { ApiError } from '@campaign-ops/api-errors';
import { AccountDirectory, Authentication } from '@campaign-ops/accounts';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { noRoute } from './api-exception.filter';
import { GatewayRequest } from './request-context';

export function bearer(request: GatewayRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}

const AUTHENTICATION = Symbol('authentication');

/**
 * One key lookup per request: the rate limiter (before the body is read) and ApiKeyGuard share it.
 */
export function authenticateOnce(directory: AccountDirectory, request: GatewayRequest, key: string): Promise<Authentication> {
  const memo = request as GatewayRequest & { [AUTHENTICATION]?: { key: string; result: Promise<Authentication> } };
  if (memo[AUTHENTICATION]?.key !== key) memo[AUTHENTICATION] = { key, result: directory.authenticate(key) };
  return memo[AUTHENTICATION].result;
}

/** Partners' API keys: the account and mode every /v1 call is scoped to. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly directory: AccountDirectory) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    await admitPartner(this.directory, context.switchToHttp().getRequest<GatewayRequest>());
    return true;
  }
}

/** The partner a request acts for, from its key, set as `request.caller`; else 401 `api_key_missing`, `_invalid` or `_revoked`. */
export async function admitPartner(directory: AccountDirectory, request: GatewayRequest): Promise<void> {
  const key = bearer(request);
  if (key === null) throw new ApiError('api_key_missing', 'Send your API key as Authorization: Bearer <key>.');
  const found = await authenticateOnce(directory, request, key);
  if (!found.ok) {
    throw found.code === 'api_key_revoked'
      ? new ApiError('api_key_revoked', 'This API key has been revoked.')
      : new ApiError('api_key_invalid', 'The API key is not valid.');
  }
  request.caller = { accountId: found.accountId, mode: found.mode, requestId: request.requestId, keyId: found.keyId };
}

/** Operators' Admin API: enabled only when ADMIN_TOKEN is set, and then only with it. */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer | null;

  constructor(@Inject(CONFIG) config: ServiceConfig) {
    this.expected = config.adminToken ? createHash('sha256').update(config.adminToken).digest() : null;
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GatewayRequest>();
    if (!this.expected) throw noRoute(request);
    const token = bearer(request);
    if (token === null) throw new ApiError('api_key_missing', 'Send the admin token as Authorization: Bearer <token>.');
    if (!this.accepts(token)) throw new ApiError('api_key_invalid', 'The admin token is not valid.');
    return true;
  }

  /** Whether `token` is the admin token (compared in constant time); false while the Admin API is off. */
  accepts(token: string): boolean {
    if (!this.expected) return false;
    return timingSafeEqual(createHash('sha256').update(token).digest(), this.expected);
  }
}
