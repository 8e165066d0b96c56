import type { NextFunction, Response } from 'express';
import { AccountDirectory } from '@campaign-ops/accounts';
import { ApiError } from '@campaign-ops/api-errors';
import { SUBJECTS } from '@campaign-ops/service-messages';
import { sandboxCampaign } from '../../../../test/support/partner-client';
import { StoredAnswer } from './idempotency';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { LaunchRoute } from './launch-route';
import { GatewayRequest } from './request-context';
import { ServiceClient } from './service-client';

const DISPATCH = { id: 'dsp_1', status: 'accepted' };

const KEPT: StoredAnswer = { status: 402, contentType: 'application/json; charset=utf-8', body: '{"kept":true}', requestId: 'req_0' };

function routeWith(
  authenticate: AccountDirectory['authenticate'] = async () => ({ ok: true, accountId: 'acct_1', mode: 'test', keyId: 'key_1' }) as never,
  kept: StoredAnswer | null = null,
) {
  const calls: Array<{ subject: string; message: unknown }> = [];
  const services = { call: async (subject: string, message: unknown) => (calls.push({ subject, message }), DISPATCH) } as unknown as ServiceClient;
  const idempotency = { admit: async () => kept } as unknown as IdempotencyInterceptor;
  return { route: new LaunchRoute({ authenticate } as AccountDirectory, idempotency, services), calls };
}

const request = (over: Partial<GatewayRequest> = {}) =>
  ({
    method: 'POST',
    url: '/v1/campaigns',
    body: sandboxCampaign(),
    requestId: 'req_1',
    headers: { authorization: 'Bearer mk_test_x', 'idempotency-key': 'launch-1' },
    ...over,
  }) as unknown as GatewayRequest;

/** Runs the middleware: what it sent (status and body), or what it handed to next(). */
async function run(route: LaunchRoute, req: GatewayRequest): Promise<{ sent?: { status: number; body: unknown; headers?: object }; next?: unknown[] }> {
  return new Promise((resolve) => {
    let status = 0;
    const headers: Record<string, string> = {};
    const response = {
      status: (s: number) => ((status = s), response),
      json: (body: unknown) => resolve({ sent: { status, body } }),
      set statusCode(s: number) {
        status = s;
      },
      setHeader: (name: string, value: string) => (headers[name] = value),
      send: (body: unknown) => resolve({ sent: { status, body, headers } }),
    } as unknown as Response;
    route.handle(req, response, ((...args: unknown[]) => resolve({ next: args })) as NextFunction);
  });
}

describe('LaunchRoute', () => {
  it('answers a valid launch itself: the dispatch in the envelope, the command sent with the caller', async () => {
    const { route, calls } = routeWith();
    expect(await run(route, request())).toEqual({
      sent: {
        status: 200,
        body: JSON.stringify({ success: true, data: DISPATCH, request_id: 'req_1' }),
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
      },
    });
    expect(calls).toEqual([
      {
        subject: SUBJECTS.dispatchCreate,
        message: { caller: { accountId: 'acct_1', mode: 'test', requestId: 'req_1' }, ...sandboxCampaign(), idempotencyKey: 'launch-1' },
      },
    ]);
  });

  it.each<[string, Partial<GatewayRequest>]>([
    ['another method', { method: 'PUT' }],
    ['a query string', { url: '/v1/campaigns?x=1' }],
    ['another path', { url: '/v1/campaigns/validate' }],
    ['a body the rules refuse', { body: { ...sandboxCampaign(), channel: 'myspace_ads' } }],
    ['no body', { body: undefined }],
  ])('leaves %s to the Nest route, untouched', async (_name, over) => {
    const { route, calls } = routeWith();
    expect(await run(route, request(over))).toEqual({ next: [] });
    expect(calls).toEqual([]);
  });

  it('replays the answer kept for its Idempotency-Key, and sends no command', async () => {
    const { route, calls } = routeWith(undefined, KEPT);
    expect(await run(route, request())).toEqual({
      sent: { status: 402, body: '{"kept":true}', headers: { 'Content-Type': KEPT.contentType, 'Idempotent-Replayed': 'true', 'X-Request-Id': 'req_0' } },
    });
    expect(calls).toEqual([]);
  });

  it('hands a refused key to the error handler, and sends nothing', async () => {
    const { route, calls } = routeWith(async () => ({ ok: false, code: 'api_key_revoked' }) as never);
    const { next } = await run(route, request());
    expect(next![0]).toBeInstanceOf(ApiError);
    expect((next![0] as ApiError).code).toBe('api_key_revoked');
    expect(calls).toEqual([]);
  });
});
