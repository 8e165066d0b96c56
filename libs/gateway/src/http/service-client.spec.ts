import { Bus, BusTimeoutError, RequestOptions } from '@campaign-ops/bus';
import { ApiError } from '@campaign-ops/api-errors';
import { LocalServices } from '@campaign-ops/service-runtime';
import { ServiceClient } from './service-client';

/** A bus that answers every request at once, and remembers how long each caller said it would wait. */
function recordingBus(): { bus: Bus; waits: Array<{ subject: string; timeoutMs?: number; requestId?: string }>; failWith: (error: Error | null) => void } {
  const waits: Array<{ subject: string; timeoutMs?: number; requestId?: string }> = [];
  let failure: Error | null = null;
  const bus = {
    request: async (subject: string, data: unknown, options: RequestOptions = {}) => {
      waits.push({ subject, timeoutMs: options.timeoutMs, requestId: options.headers?.['X-Request-Id'] });
      if (failure) throw failure;
      return { ok: true, value: { echoed: data } };
    },
  } as unknown as Bus;
  return { bus, waits, failWith: (error) => void (failure = error) };
}

describe('ServiceClient', () => {
  it("waits BUS_REQUEST_TIMEOUT_MS by default, and the caller's own when it names one", async () => {
    const { bus, waits } = recordingBus();
    const services = new ServiceClient(bus, { requestTimeoutMs: 10_000 }, new LocalServices());
    expect(await services.call('svc.connection.get', { caller: { requestId: 'req_1' }, id: 'con_1' })).toEqual({
      echoed: { caller: { requestId: 'req_1' }, id: 'con_1' },
    });
    expect(await services.call('svc.connection.create', { caller: { requestId: 'req_2' } }, { timeoutMs: 120_000 })).toEqual({
      echoed: { caller: { requestId: 'req_2' } },
    });
    expect(waits).toEqual([
      { subject: 'svc.connection.get', timeoutMs: 10_000, requestId: 'req_1' },
      { subject: 'svc.connection.create', timeoutMs: 120_000, requestId: 'req_2' },
    ]);
  });

  it('answers 503 service_unavailable when even the longer wait runs out', async () => {
    const { bus, failWith } = recordingBus();
    failWith(new BusTimeoutError('svc.connection.create'));
    const services = new ServiceClient(bus, { requestTimeoutMs: 10_000 }, new LocalServices());
    const error = await services.call('svc.connection.create', { requestId: 'req_3' }, { timeoutMs: 120_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'service_unavailable' });
  });
});
