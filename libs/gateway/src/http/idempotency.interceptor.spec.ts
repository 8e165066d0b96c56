import { Body, Controller, ExecutionContext, HttpCode, INestApplication, Logger, Param, Patch, Post } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { NextFunction, Response } from 'express';
import { of } from 'rxjs';
import { ApiError } from '@campaign-ops/api-errors';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ApiDocument } from '../openapi/api-document';
import { ApiExceptionFilter } from './api-exception.filter';
import { ApiInterceptors } from './api-interceptors';
import { EnvelopeInterceptor } from './envelope.interceptor';
import { IdempotencyStore } from './idempotency';
import { idempotencyScope, IdempotencyInterceptor, IgnoresIdempotencyKey } from './idempotency.interceptor';
import { UnknownQueryInterceptor } from './unknown-query.interceptor';
import { jsonBodyMiddleware } from './json-body.middleware';
import { GatewayRequest } from './request-context';
import { requestIdMiddleware } from './request-id.middleware';

/** Handlers that count their runs and answer what the test asks for. */
const runs: string[] = [];
let gate: Promise<void> = Promise.resolve();

@Controller('v1/things')
class ThingsController {
  @Post()
  @HttpCode(200)
  create(@Body() body: { name?: string }) {
    runs.push(`create:${body?.name}`);
    return { id: `thing_${runs.length}`, name: body?.name ?? null, at: process.hrtime.bigint().toString() };
  }

  @Post('slow')
  @HttpCode(200)
  async slow() {
    runs.push('slow');
    await gate;
    return { id: `slow_${runs.length}` };
  }

  @Post('check')
  @HttpCode(200)
  @IgnoresIdempotencyKey()
  check(@Body() body: { name?: string }) {
    runs.push(`check:${body?.name}`);
    return { checked: body?.name ?? null, at: process.hrtime.bigint().toString() };
  }

  @Patch(':id')
  @HttpCode(200)
  update(@Param('id') id: string) {
    runs.push(`update:${id}`);
    return { id };
  }

  @Post('fail/:code')
  @HttpCode(200)
  fail(@Param('code') code: string) {
    runs.push(`fail:${code}`);
    if (code === 'crash') throw new Error('boom');
    throw new ApiError(code as never, `failed with ${code}`);
  }
}

@Controller('admin/v1/things')
class AdminThingsController {
  @Post()
  @HttpCode(200)
  create() {
    runs.push('admin');
    return { id: `admin_${runs.length}` };
  }
}

/** Stands in for ApiKeyGuard: `X-Account` makes the caller. */
function fakeAuth(request: GatewayRequest, _response: Response, next: NextFunction): void {
  const account = request.header('X-Account');
  if (account)
    request.caller = { accountId: account, mode: request.header('X-Mode') === 'live' ? 'live' : 'test', requestId: request.requestId, keyId: `key_${account}` };
  next();
}

interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
}

describe('IdempotencyInterceptor', () => {
  let reads: SqliteReadStore;
  let app: INestApplication;
  let base: string;

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<RawAnswer> => {
    const response = await fetch(base + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Account': 'acct_1', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  beforeAll(async () => {
    reads = SqliteReadStore.open(':memory:');
    const moduleRef = await Test.createTestingModule({
      controllers: [ThingsController, AdminThingsController],
      providers: [
        { provide: IdempotencyStore, useFactory: () => new IdempotencyStore(reads, { sweepIntervalMs: 0 }) },
        ApiDocument,
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        // The gateway's own chain (gateway.module.ts): unknown query, idempotency, envelope.
        UnknownQueryInterceptor,
        IdempotencyInterceptor,
        EnvelopeInterceptor,
        { provide: APP_INTERCEPTOR, useClass: ApiInterceptors },
      ],
    }).compile();
    app = moduleRef.createNestApplication({ bodyParser: false, logger: false });
    app.use(requestIdMiddleware);
    app.use(jsonBodyMiddleware);
    app.use(fakeAuth);
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
    base = base.replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    await reads?.close();
  });

  beforeEach(() => {
    runs.length = 0;
  });

  it('replays the first answer byte for byte, with Idempotent-Replayed and the original request id', async () => {
    const first = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'replay-1' });
    const again = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'replay-1' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect([again.status, again.text]).toEqual([first.status, first.text]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('x-request-id')).toBe(JSON.parse(first.text).request_id);
    expect(runs).toEqual(['create:a']);
  });

  it('answers 409 idempotency_key_reused to another body, and does not run it', async () => {
    await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'reused-1' });
    const other = await post('/v1/things', { name: 'b' }, { 'Idempotency-Key': 'reused-1' });
    expect(other.status).toBe(409);
    expect(JSON.parse(other.text)).toMatchObject({
      success: false,
      error: {
        type: 'idempotency_error',
        code: 'idempotency_key_reused',
        param: 'Idempotency-Key',
        message: 'This Idempotency-Key was already used with a different request; send a new key for a new request.',
      },
    });
    // same JSON, other bytes: another request too
    const spaced = await post('/v1/things', '{"name": "a"}', { 'Idempotency-Key': 'reused-1' });
    expect(JSON.parse(spaced.text).error.code).toBe('idempotency_key_reused');
    // another path with the same key
    const elsewhere = await post('/v1/things/slow', { name: 'a' }, { 'Idempotency-Key': 'reused-1' });
    expect(JSON.parse(elsewhere.text).error.code).toBe('idempotency_key_reused');
    expect(runs).toEqual(['create:a']);
  });

  it('answers 409 idempotency_key_in_use while the first request runs', async () => {
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const first = post('/v1/things/slow', {}, { 'Idempotency-Key': 'slow-1' });
    while (!runs.includes('slow')) await new Promise((r) => setTimeout(r, 5));
    const during = await post('/v1/things/slow', {}, { 'Idempotency-Key': 'slow-1' });
    expect(during.status).toBe(409);
    expect(JSON.parse(during.text).error).toEqual({
      type: 'idempotency_error',
      code: 'idempotency_key_in_use',
      param: 'Idempotency-Key',
      message: 'A request with this Idempotency-Key is still in progress; retry once it has finished.',
    });
    open();
    const done = await first;
    const after = await post('/v1/things/slow', {}, { 'Idempotency-Key': 'slow-1' });
    expect([after.status, after.text, after.headers.get('idempotent-replayed')]).toEqual([200, done.text, 'true']);
    expect(runs).toEqual(['slow']);
  });

  it.each([
    ['parameter_invalid', 400],
    ['resource_missing', 404],
    ['service_unavailable', 503],
    ['crash', 500],
  ])('releases the key after %s (%i): the same key runs again', async (code, status) => {
    const key = `release-${code}`;
    const failed = await post(`/v1/things/fail/${code}`, {}, { 'Idempotency-Key': key });
    expect(failed.status).toBe(status);
    const again = await post(`/v1/things/fail/${code}`, {}, { 'Idempotency-Key': key });
    expect(again.status).toBe(status);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    // and a corrected request may use it too
    const fixed = await post('/v1/things', { name: 'fixed' }, { 'Idempotency-Key': key });
    expect(fixed.status).toBe(200);
    expect(runs).toEqual([`fail:${code}`, `fail:${code}`, 'create:fixed']);
  });

  it.each([
    ['insufficient_credits', 402],
    ['dispatch_not_retryable', 409],
    ['connection_required', 422],
  ])('keeps the business outcome %s (%i) and replays it', async (code, status) => {
    const key = `keep-${code}`;
    const first = await post(`/v1/things/fail/${code}`, {}, { 'Idempotency-Key': key });
    const again = await post(`/v1/things/fail/${code}`, {}, { 'Idempotency-Key': key });
    expect(first.status).toBe(status);
    expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([status, first.text, 'true']);
    expect(runs).toEqual([`fail:${code}`]);
  });

  it('refuses a malformed key with 400 parameter_invalid before running anything', async () => {
    const spaced = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'has space' });
    const long = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'k'.repeat(256) });
    for (const answer of [spaced, long]) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error).toMatchObject({ code: 'parameter_invalid', param: 'Idempotency-Key' });
    }
    expect((await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'k'.repeat(255) })).status).toBe(200);
    expect(runs).toEqual(['create:a']);
  });

  it('scopes keys to the account and the mode', async () => {
    const a = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'scoped-1' });
    const other = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'scoped-1', 'X-Account': 'acct_2' });
    const live = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'scoped-1', 'X-Mode': 'live' });
    expect(new Set([a, other, live].map((r) => JSON.parse(r.text).data.id)).size).toBe(3);
    expect([other, live].map((r) => r.headers.get('idempotent-replayed'))).toEqual([null, null]);
    expect(runs).toHaveLength(3);
  });

  it('scopes Admin API keys to admin', async () => {
    const first = await post('/admin/v1/things', {}, { 'Idempotency-Key': 'admin-1', 'X-Account': '' });
    const again = await post('/admin/v1/things', {}, { 'Idempotency-Key': 'admin-1', 'X-Account': '' });
    expect([again.text, again.headers.get('idempotent-replayed')]).toEqual([first.text, 'true']);
    expect(runs).toEqual(['admin']);
  });

  it('ignores the key of a POST marked as ignoring it (the dry run): every request runs, whatever its body, never replayed', async () => {
    const first = await post('/v1/things/check', { name: 'a' }, { 'Idempotency-Key': 'dry-1' });
    const again = await post('/v1/things/check', { name: 'a' }, { 'Idempotency-Key': 'dry-1' });
    const other = await post('/v1/things/check', { name: 'b' }, { 'Idempotency-Key': 'dry-1' });
    expect([first.status, again.status, other.status]).toEqual([200, 200, 200]);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(runs).toEqual(['check:a', 'check:a', 'check:b']);
    // The key was never taken: an ordinary POST can use it afterwards.
    expect((await post('/v1/things', { name: 'c' }, { 'Idempotency-Key': 'dry-1' })).status).toBe(200);
  });

  it('leaves requests other than POST alone, key or not', async () => {
    for (let n = 0; n < 2; n++) {
      const response = await fetch(`${base}/v1/things/t1`, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'patch-1', 'X-Account': 'acct_1' },
        body: '{}',
      });
      expect([response.status, response.headers.get('idempotent-replayed')]).toEqual([200, null]);
    }
    expect(runs).toEqual(['update:t1', 'update:t1']);
  });

  it('still answers when the answer cannot be kept, and logs that under idempotency with the request id', async () => {
    const complete = jest.spyOn(IdempotencyStore.prototype, 'complete').mockRejectedValueOnce(new Error('store down'));
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const answer = await post('/v1/things', { name: 'a' }, { 'Idempotency-Key': 'unkept-1' });
      expect(answer.status).toBe(200);
      const requestId = JSON.parse(answer.text).request_id;
      expect(error.mock.calls.map((call, n) => [JSON.parse(call[0] as string), (error.mock.contexts[n] as { context?: string }).context])).toEqual([
        [{ msg: 'idempotency record not written', request_id: requestId, error: 'store down' }, 'idempotency'],
      ]);
      expect(complete).toHaveBeenCalledTimes(1);
    } finally {
      complete.mockRestore();
      error.mockRestore();
    }
  });

  it('runs every request without a key', async () => {
    await post('/v1/things', { name: 'a' });
    await post('/v1/things', { name: 'a' });
    expect(runs).toEqual(['create:a', 'create:a']);
  });
});

describe('idempotencyScope', () => {
  const request = (path: string, caller?: GatewayRequest['caller']) => ({ path, caller }) as GatewayRequest;
  it("is the caller's account and mode, the operators' on the Admin API, and nobody's elsewhere", () => {
    expect(idempotencyScope(request('/v1/campaigns', { accountId: 'acct_1', mode: 'live', requestId: 'req_1', keyId: 'key_1' }))).toBe('acct_1:live');
    expect(idempotencyScope(request('/admin/v1/accounts'))).toBe('admin');
    expect(idempotencyScope(request('/v1/campaigns'))).toBeNull();
    expect(idempotencyScope(request('/administrator'))).toBeNull();
  });
});

describe('IdempotencyInterceptor outside HTTP', () => {
  it('lets a bus message through without touching the store', async () => {
    const begin = jest.fn();
    const interceptor = new IdempotencyInterceptor({ begin } as unknown as IdempotencyStore);
    const handled = of('answer');
    const context = {
      getType: () => 'rpc',
      switchToHttp: () => {
        throw new Error('not HTTP');
      },
    } as unknown as ExecutionContext;
    expect(await interceptor.intercept(context, { handle: () => handled })).toBe(handled);
    expect(begin).not.toHaveBeenCalled();
  });
});
