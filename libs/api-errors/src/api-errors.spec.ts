import { ApiError, ERROR_CATALOG, failure, unavailable, unwrap } from './api-errors';

describe('api errors', () => {
  it('map every code to the status and type of docs/api.md#errors', () => {
    expect(new ApiError('parameter_invalid', 'x').status).toBe(400);
    expect(new ApiError('api_key_revoked', 'x').type).toBe('authentication_error');
    expect(new ApiError('insufficient_credits', 'x').status).toBe(402);
    expect(new ApiError('idempotency_key_reused', 'x').type).toBe('idempotency_error');
    expect(new ApiError('dispatch_not_retryable', 'x').type).toBe('invalid_request_error');
    expect(new ApiError('rate_limited', 'x').status).toBe(429);
    expect(new ApiError('service_unavailable', 'x').status).toBe(503);
    expect(new ApiError('connection_exists', 'x').status).toBe(409);
    expect(new ApiError('channel_not_configured', 'x').status).toBe(422);
    expect(new ApiError('state_invalid', 'x').status).toBe(400);
    expect([new ApiError('provider_unavailable', 'x').status, new ApiError('provider_unavailable', 'x').type]).toEqual([502, 'api_error']);
    expect(Object.keys(ERROR_CATALOG)).toHaveLength(34);
  });

  it('travel as values and come back as the same error', () => {
    expect(() => unwrap(failure('resource_missing', 'No such dispatch: dsp_1', 'id'))).toThrow(
      expect.objectContaining({ code: 'resource_missing', param: 'id', status: 404 }),
    );
  });

  it('come back with Retry-After where the code says to try again later: the seconds the service said, else 1', () => {
    const thrown = (outcome: Parameters<typeof unwrap>[0]) => {
      try {
        unwrap(outcome);
      } catch (error) {
        return error as ApiError;
      }
      throw new Error('no error');
    };
    expect(thrown(unavailable('The dispatch backlog is full.', 7))).toMatchObject({
      code: 'service_unavailable',
      status: 503,
      headers: { 'Retry-After': '7' },
    });
    expect(thrown(failure('service_unavailable', 'Connections cannot be checked right now.')).headers).toEqual({ 'Retry-After': '1' });
    expect(thrown(failure('rate_limited', 'Slow down.')).headers).toEqual({ 'Retry-After': '1' });
    expect(thrown(failure('resource_missing', 'No such dispatch: dsp_1', 'id')).headers).toEqual({});
  });

  it('turn an unknown code from the wire into an internal error', () => {
    expect(ApiError.fromBody({ code: 'nope' as never, message: 'm' }).code).toBe('internal_error');
  });
});
