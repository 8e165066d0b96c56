import { Bus, BusRemoteError, BusTimeoutError, RequestOptions } from '@campaign-ops/bus';
import { LocalServices } from './local-services';
import { currentRequestId, withRequestId } from './request-context';

/** A bus that answers every request itself, and records what it was asked. */
function recordingBus() {
  const asked: Array<{ subject: string; data: unknown; options: RequestOptions }> = [];
  const bus = {
    request: async (subject: string, data: unknown, options: RequestOptions = {}) => {
      asked.push({ subject, data, options });
      return { overTheBus: true };
    },
  } as unknown as Bus;
  return { bus, asked };
}

describe('LocalServices', () => {
  it('given a subject served in this process, when it is requested, then its handler answers with the caller’s object and the bus is not asked', async () => {
    const { bus, asked } = recordingBus();
    const local = new LocalServices();
    const seen: unknown[] = [];
    const answer = { dispatch: { id: 'dsp_1' } };
    local.serve('svc.dispatch.create', async (request: { n: number }) => {
      seen.push(request);
      return answer;
    });
    const request = { n: 1 };
    expect(await local.request(bus, 'svc.dispatch.create', request)).toBe(answer);
    expect(seen[0]).toBe(request);
    expect(asked).toEqual([]);
  });

  it('given a subject no service of this process serves, when it is requested, then it goes over the bus with its timeout and request id', async () => {
    const { bus, asked } = recordingBus();
    const local = new LocalServices();
    local.serve('svc.dispatch.create', async () => 'local');
    expect(await local.request(bus, 'svc.connection.resolve', { n: 2 }, { timeoutMs: 1234, requestId: 'req_1' })).toEqual({ overTheBus: true });
    expect(asked).toEqual([{ subject: 'svc.connection.resolve', data: { n: 2 }, options: { timeoutMs: 1234, headers: { 'X-Request-Id': 'req_1' } } }]);
  });

  it('runs the handler under the request id given, else the one of the work in hand, as a handler over the bus', async () => {
    const { bus } = recordingBus();
    const local = new LocalServices();
    local.serve('svc.x', async () => currentRequestId());
    expect(await local.request(bus, 'svc.x', {}, { requestId: 'req_given' })).toBe('req_given');
    expect(await withRequestId('req_around', () => local.request(bus, 'svc.x', {}))).toBe('req_around');
    expect(await local.request(bus, 'svc.x', {})).toBeUndefined();
  });

  it('reports a failing handler by its message, as BusRemoteError, as the bus reports a responder’s failure', async () => {
    const local = new LocalServices();
    local.serve('svc.x', async () => {
      throw new TypeError('boom');
    });
    local.serve('svc.y', async () => {
      throw 'not an error';
    });
    const { bus } = recordingBus();
    await expect(local.request(bus, 'svc.x', {})).rejects.toEqual(new BusRemoteError('svc.x', 'boom'));
    await expect(local.request(bus, 'svc.x', {})).rejects.toBeInstanceOf(BusRemoteError);
    await expect(local.request(bus, 'svc.y', {})).rejects.toEqual(new BusRemoteError('svc.y', 'not an error'));
  });

  it('gives up on a handler that does not answer within the timeout with BusTimeoutError, never a hang', async () => {
    const local = new LocalServices();
    let release: (value: string) => void = () => undefined;
    local.serve('svc.slow', () => new Promise<string>((resolve) => (release = resolve)));
    const { bus } = recordingBus();
    const started = performance.now();
    await expect(local.request(bus, 'svc.slow', {}, { timeoutMs: 30 })).rejects.toBeInstanceOf(BusTimeoutError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    release('late');
  });

  it('refuses a second handler for the same subject', () => {
    const local = new LocalServices();
    local.serve('svc.x', async () => 1);
    expect(() => local.serve('svc.x', async () => 2)).toThrow('svc.x is already served in this process');
  });
});
