import { ArgumentsHost, NotFoundException } from '@nestjs/common';
import { ApiError } from '@campaign-ops/api-errors';
import { ApiDocument } from '../openapi/api-document';
import type { OpenApiDocument } from '../openapi/openapi.document';
import { ApiExceptionFilter } from './api-exception.filter';

const routes = new ApiDocument();
routes.load({ paths: { '/v1/campaigns': { post: {} }, '/v1/dispatches/{id}': { get: {} } } } as unknown as OpenApiDocument);

/** Runs the filter on an exception as Nest would, and captures the answer. */
function answer(exception: unknown, path = '/v1/dispatches') {
  const sent: { status?: number; body?: Record<string, any>; headers: Record<string, string> } = { headers: {} };
  const response = {
    headersSent: false,
    setHeader: (name: string, value: string) => void (sent.headers[name] = value),
    status(code: number) {
      sent.status = code;
      return this;
    },
    json: (body: Record<string, any>) => void (sent.body = body),
  };
  const request = { requestId: 'req_test', method: 'GET', path };
  const host = { switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }) } as unknown as ArgumentsHost;
  new ApiExceptionFilter(routes).catch(exception, host);
  return sent;
}

describe('ApiExceptionFilter', () => {
  it('answers an unexpected error 500 internal_error, without its message or stack', () => {
    const failure = new Error('SQLITE_CORRUPT at /work/main/data/events.sqlite mk_live_secretsecret');
    const { status, body } = answer(failure);
    expect(status).toBe(500);
    expect(body).toEqual({
      success: false,
      error: { type: 'api_error', code: 'internal_error', message: expect.any(String) },
      request_id: 'req_test',
    });
    expect(JSON.stringify(body)).not.toMatch(/SQLITE|mk_live|at .*\.ts/);
  });

  it('answers an API error with its status, type, code, param and headers', () => {
    const { status, body, headers } = answer(new ApiError('service_unavailable', 'down', undefined, { 'Retry-After': '1' }));
    expect([status, body?.error, headers]).toEqual([503, { type: 'api_error', code: 'service_unavailable', message: 'down' }, { 'Retry-After': '1' }]);
    expect(answer(new ApiError('parameter_invalid', 'bad', 'campaign.name')).body?.error.param).toBe('campaign.name');
  });

  it('tells an unknown route from a known route with another method', () => {
    expect(answer(new NotFoundException(), '/v1/nowhere').body?.error.code).toBe('route_not_found');
    const wrongMethod = answer(new NotFoundException(), '/v1/campaigns');
    expect([wrongMethod.status, wrongMethod.body?.error.code, wrongMethod.headers.Allow]).toEqual([405, 'method_not_allowed', 'POST']);
  });

  it('repeats at most the first 200 characters of a path it names', () => {
    const long = `/v1/${'x'.repeat(16_000)}`;
    const message: string = answer(new NotFoundException(), long).body?.error.message;
    expect(message).toBe(`No route GET ${long.slice(0, 200)}….`);
    expect(answer(new NotFoundException(), '/v1/short').body?.error.message).toBe('No route GET /v1/short.');
  });
});
