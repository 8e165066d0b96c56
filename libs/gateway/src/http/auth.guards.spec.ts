import { ExecutionContext } from '@nestjs/common';
import { ApiError } from '@campaign-ops/api-errors';
import { ServiceConfig } from '@campaign-ops/service-runtime';
import { AdminTokenGuard } from './auth.guards';

const TOKEN = 'admin-token-0123456789';

function guardWith(adminToken: string | null): AdminTokenGuard {
  return new AdminTokenGuard({ adminToken } as ServiceConfig);
}

/** Runs the guard on a request with this Authorization header (or none), as Nest would. */
function check(guard: AdminTokenGuard, authorization?: string): boolean | ApiError {
  const request = { method: 'POST', path: '/admin/v1/accounts', header: (name: string) => (name === 'Authorization' ? authorization : undefined) };
  const context = { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
  try {
    return guard.canActivate(context);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

const codeOf = (outcome: boolean | ApiError) => (outcome instanceof ApiError ? outcome.code : outcome);

describe('AdminTokenGuard', () => {
  describe('without ADMIN_TOKEN, the Admin API does not exist', () => {
    const guard = guardWith(null);

    it.each([
      ['no Authorization header', undefined],
      ['a bearer token', `Bearer ${TOKEN}`],
      ['an empty bearer token', 'Bearer '],
    ])('answers route_not_found to a request with %s', (_, authorization) => {
      const outcome = check(guard, authorization);
      expect(codeOf(outcome)).toBe('route_not_found');
      expect((outcome as ApiError).status).toBe(404);
    });

    it('accepts no token at all (the rate limiter asks it too)', () => {
      expect(guard.accepts(TOKEN)).toBe(false);
      expect(guard.accepts('')).toBe(false);
    });
  });

  describe('with ADMIN_TOKEN, only that token passes', () => {
    const guard = guardWith(TOKEN);

    it('answers api_key_missing without an Authorization header', () => {
      expect(codeOf(check(guard))).toBe('api_key_missing');
    });

    it.each([
      ['another token', 'Bearer admin-token-0123456780'],
      ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
      ['the token with more after it', `Bearer ${TOKEN}x`],
      ['an empty bearer token', 'Bearer '],
      ['the token without the Bearer scheme', TOKEN],
    ])('answers api_key_invalid to %s', (_, authorization) => {
      const outcome = check(guard, authorization);
      expect(codeOf(outcome)).toBe('api_key_invalid');
      expect((outcome as ApiError).status).toBe(401);
    });

    it('lets the right token through', () => {
      expect(check(guard, `Bearer ${TOKEN}`)).toBe(true);
      expect(guard.accepts(TOKEN)).toBe(true);
    });
  });
});
