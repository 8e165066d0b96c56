import { ExecutionContext } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountDirectory } from '@campaign-ops/accounts';
import { ApiError } from '@campaign-ops/api-errors';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ServiceConfig } from '@campaign-ops/service-runtime';
import { AdminTokenGuard, ApiKeyGuard, authenticateOnce, bearer } from './auth.guards';
import { GatewayRequest } from './request-context';

const TOKEN = 'admin-token-0123456789';

/** A request as the guards read it, with this Authorization header (or none). */
function requestWith(authorization?: string): GatewayRequest {
  return {
    method: 'POST',
    path: '/admin/v1/accounts',
    requestId: 'req_test',
    headers: authorization === undefined ? {} : { authorization },
  } as unknown as GatewayRequest;
}

/** Runs a guard on the request as Nest would: its verdict, or the API error it throws. */
async function check(guard: { canActivate(context: ExecutionContext): boolean | Promise<boolean> }, request: GatewayRequest): Promise<boolean | ApiError> {
  const context = { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
  try {
    return await guard.canActivate(context);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

/** The error's code, once it is known to say something to the caller (a message is part of every API error). */
const codeOf = (outcome: boolean | ApiError) => {
  if (!(outcome instanceof ApiError)) return outcome;
  expect(outcome.message).not.toBe('');
  return outcome.code;
};

describe('bearer', () => {
  it.each([
    [undefined, null],
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['Bearer   abc  ', 'abc'],
    ['Basic abc', ''],
    ['Bearer a b', ''],
    ['Bearer ', ''],
    ['abc', ''],
    ['XBearer abc', ''],
  ])('reads %j as %j (null: no header; empty: a header that is not a bearer token)', (header, token) => {
    expect(bearer(requestWith(header))).toBe(token);
  });
});

describe('AdminTokenGuard', () => {
  const guardWith = (adminToken: string | null) => new AdminTokenGuard({ adminToken } as ServiceConfig);

  describe('without ADMIN_TOKEN, the Admin API does not exist', () => {
    const guard = guardWith(null);

    it.each([
      ['no Authorization header', undefined],
      ['a bearer token', `Bearer ${TOKEN}`],
      ['an empty bearer token', 'Bearer '],
    ])('answers route_not_found to a request with %s', async (_, authorization) => {
      const outcome = await check(guard, requestWith(authorization));
      expect(codeOf(outcome)).toBe('route_not_found');
      expect((outcome as ApiError).status).toBe(404);
      expect((outcome as ApiError).message).toContain('POST /admin/v1/accounts');
    });

    it('accepts no token at all (the rate limiter asks it too)', () => {
      expect(guard.accepts(TOKEN)).toBe(false);
      expect(guard.accepts('')).toBe(false);
    });
  });

  describe('with ADMIN_TOKEN, only that token passes', () => {
    const guard = guardWith(TOKEN);

    it('answers api_key_missing without an Authorization header', async () => {
      expect(codeOf(await check(guard, requestWith()))).toBe('api_key_missing');
    });

    it.each([
      ['another token', 'Bearer admin-token-0123456780'],
      ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
      ['the token with more after it', `Bearer ${TOKEN}x`],
      ['an empty bearer token', 'Bearer '],
      ['the token without the Bearer scheme', TOKEN],
    ])('answers api_key_invalid to %s', async (_, authorization) => {
      const outcome = await check(guard, requestWith(authorization));
      expect(codeOf(outcome)).toBe('api_key_invalid');
      expect((outcome as ApiError).status).toBe(401);
    });

    it('lets the right token through', async () => {
      expect(await check(guard, requestWith(`Bearer ${TOKEN}`))).toBe(true);
      expect(guard.accepts(TOKEN)).toBe(true);
      expect(guard.accepts(`${TOKEN} `)).toBe(false);
    });
  });
});

describe('ApiKeyGuard, over a real account directory', () => {
  let dir: string;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let directory: AccountDirectory;
  let guard: ApiKeyGuard;
  let accountId: string;

  const issue = async (mode: 'live' | 'test') => {
    const outcome = await directory.issueKey(accountId, mode);
    if (!outcome.ok) throw new Error(outcome.error.message);
    return outcome.value;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'auth-guards-'));
    events = SqliteEventStore.open(join(dir, 'events.sqlite'));
    reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    directory = new AccountDirectory(events, reads);
    guard = new ApiKeyGuard(directory);
    accountId = (await directory.openAccount('Acme')).account.id;
  });

  afterAll(async () => {
    await events?.close();
    await reads?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers api_key_missing without an Authorization header', async () => {
    expect(codeOf(await check(guard, requestWith()))).toBe('api_key_missing');
  });

  it.each([
    ['a key nobody issued', 'Bearer mk_test_' + 'x'.repeat(40)],
    ['something that is not a key', 'Bearer not-a-key'],
    ['a header that is not a bearer token', 'Basic abc'],
  ])('answers api_key_invalid to %s', async (_, authorization) => {
    expect(codeOf(await check(guard, requestWith(authorization)))).toBe('api_key_invalid');
  });

  it('answers api_key_revoked to a revoked key', async () => {
    const key = await issue('test');
    await directory.revokeKey(key.id);
    expect(codeOf(await check(guard, requestWith(`Bearer ${key.key}`)))).toBe('api_key_revoked');
  });

  it.each(['test', 'live'] as const)('lets a %s key through, scoping the request to its account and mode', async (mode) => {
    const key = await issue(mode);
    const request = requestWith(`Bearer ${key.key}`);
    expect(await check(guard, request)).toBe(true);
    expect(request.caller).toEqual({ accountId, mode, requestId: 'req_test', keyId: key.id });
  });

  it('looks a key up once per request (the rate limiter and the guard share it), and again for another key', async () => {
    const [first, second] = [await issue('test'), await issue('live')];
    const lookups = jest.spyOn(directory, 'authenticate');
    try {
      const request = requestWith();
      const once = await authenticateOnce(directory, request, first.key);
      expect(await authenticateOnce(directory, request, first.key)).toBe(once);
      expect(lookups).toHaveBeenCalledTimes(1);
      expect(await authenticateOnce(directory, request, second.key)).toMatchObject({ ok: true, mode: 'live', keyId: second.id });
      expect(lookups).toHaveBeenCalledTimes(2);
      expect(await authenticateOnce(directory, requestWith(), first.key)).toEqual(once);
      expect(lookups).toHaveBeenCalledTimes(3);
    } finally {
      lookups.mockRestore();
    }
  });
});
