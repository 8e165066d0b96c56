import type { Response } from 'express';
import { AccountDirectory, Authentication } from '@campaign-ops/accounts';
import { ApiError } from '@campaign-ops/api-errors';
import { ServiceConfig } from '@campaign-ops/service-runtime';
import { AdminTokenGuard, authenticateOnce } from './auth.guards';
import { ApiDocument } from '../openapi/api-document';
import type { OpenApiDocument } from '../openapi/openapi.document';
import { RateLimitMiddleware } from './rate-limit.middleware';
import { GatewayRequest } from './request-context';

const GOOD_KEY = 'mk_test_' + 'a'.repeat(40);
const OTHER_KEY = 'mk_test_' + 'b'.repeat(40);

function setup(perSecond = 1, burst = 2) {
  const lookups: string[] = [];
  const directory = {
    authenticate: async (key: string): Promise<Authentication> => {
      lookups.push(key);
      if (key === GOOD_KEY) return { ok: true, accountId: 'acct_1', mode: 'test', keyId: 'key_1' };
      if (key === OTHER_KEY) return { ok: true, accountId: 'acct_1', mode: 'test', keyId: 'key_2' };
      return { ok: false, code: 'api_key_invalid' };
    },
  } as unknown as AccountDirectory;
  const admin = { accepts: (token: string) => token === 'the-admin-token-123' } as unknown as AdminTokenGuard;
  const routes = new ApiDocument();
  routes.load({
    paths: { '/v1/account': { get: {} }, '/v1/campaigns': { post: {} }, '/admin/v1/accounts': { post: {} }, '/readyz': { get: {} } },
  } as unknown as OpenApiDocument);
  const middleware = new RateLimitMiddleware({ rateLimit: { perSecond, burst } } as ServiceConfig, directory, admin, routes);

  const call = async (method: string, path: string, token?: string, ip = '10.0.0.1') => {
    const request = {
      method,
      path,
      ip,
      socket: {},
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    } as unknown as GatewayRequest;
    const headers: Record<string, string> = {};
    const response = { setHeader: (name: string, value: string) => void (headers[name] = value) } as unknown as Response;
    const error = await new Promise<unknown>((resolve) => middleware.handle(request, response, resolve));
    return { request, headers, error: error as ApiError | undefined };
  };
  return { call, lookups, directory };
}

describe('RateLimitMiddleware', () => {
  it('sets the three headers and refuses over the limit with 429 and Retry-After', async () => {
    const { call } = setup(1, 2);
    const first = await call('GET', '/v1/account', GOOD_KEY);
    expect(first.error).toBeUndefined();
    expect(first.headers).toEqual({ 'RateLimit-Limit': '1', 'RateLimit-Remaining': '1', 'RateLimit-Reset': '1' });
    await call('GET', '/v1/account', GOOD_KEY);
    const third = await call('GET', '/v1/account', GOOD_KEY);
    expect(third.error).toBeInstanceOf(ApiError);
    expect([third.error?.status, third.error?.code, third.error?.headers]).toEqual([429, 'rate_limited', { 'Retry-After': '1' }]);
    expect(third.headers['RateLimit-Remaining']).toBe('0');
  });

  it('counts each valid key on its own, and shares the lookup with ApiKeyGuard', async () => {
    const { call, lookups, directory } = setup(1, 1);
    const first = await call('POST', '/v1/campaigns', GOOD_KEY);
    expect((await call('POST', '/v1/campaigns', GOOD_KEY)).error?.code).toBe('rate_limited');
    expect((await call('POST', '/v1/campaigns', OTHER_KEY)).error).toBeUndefined();
    // requests without a valid key from the same address are a bucket of their own
    expect((await call('POST', '/v1/campaigns')).error).toBeUndefined();
    lookups.length = 0;
    await authenticateOnce(directory, first.request, GOOD_KEY);
    expect(lookups).toEqual([]);
  });

  it('counts missing and invalid keys and unknown routes against the client address, without a lookup', async () => {
    const { call, lookups } = setup(1, 3);
    expect((await call('GET', '/v1/account')).error).toBeUndefined();
    expect((await call('GET', '/v1/account', 'mk_test_wrong')).error).toBeUndefined();
    lookups.length = 0;
    expect((await call('GET', '/v1/nothing-here', GOOD_KEY)).error).toBeUndefined();
    expect(lookups).toEqual([]);
    expect((await call('GET', '/v1/account')).error?.code).toBe('rate_limited');
    expect((await call('GET', '/v1/account', undefined, '10.0.0.2')).error).toBeUndefined();
    // a valid key is not held back by its address's bucket
    expect((await call('GET', '/v1/account', GOOD_KEY)).error).toBeUndefined();
  });

  it('counts the admin token in its own bucket, a wrong one against the address', async () => {
    const { call } = setup(1, 1);
    expect((await call('POST', '/admin/v1/accounts', 'the-admin-token-123')).error).toBeUndefined();
    expect((await call('POST', '/admin/v1/accounts', 'the-admin-token-123')).error?.code).toBe('rate_limited');
    expect((await call('POST', '/admin/v1/accounts', 'not-the-token')).error).toBeUndefined();
    expect((await call('POST', '/admin/v1/accounts', 'not-the-token')).error?.code).toBe('rate_limited');
  });

  it('never limits health probes', async () => {
    const { call } = setup(1, 1);
    for (let i = 0; i < 5; i++) {
      const probe = await call('GET', '/readyz');
      expect(probe.error).toBeUndefined();
      expect(probe.headers).toEqual({});
    }
  });
});
