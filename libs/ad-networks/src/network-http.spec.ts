import { ProviderError } from '@campaign-ops/channels';
import {
  FakeAnswer,
  FakeNetwork,
  RecordedRequest,
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  refusingLoopbackUrl,
} from '../../../test/support/fake-networks';
import { NetworkHttp, closeNetworkConnections, parseRetryAfter } from './network-http';

/** The smallest fake: echoes what it received; the base supplies faults and the token endpoint. */
class EchoFake extends FakeNetwork {
  readonly channel = 'google_ads' as const;
  protected readonly oauth = { consentPath: '/consent', tokenPath: '/token' };
  protected route(req: RecordedRequest): FakeAnswer {
    if (req.path === '/html') return { status: 502, text: '<html>bad gateway</html>', contentType: 'text/html' };
    if (req.path === '/huge') return { status: 200, text: `{"data":"${'x'.repeat(10 * 1024 * 1024)}"}`, contentType: 'application/json' };
    if (req.path === '/huge-stream') return { status: 200, stream: { chunks: 160, chunkBytes: 64 * 1024 } };
    return { status: 200, json: { echoed: req.body ?? null } };
  }
  protected tokenRefusedAnswer(): FakeAnswer {
    return { status: 401, json: { error: 'expired' } };
  }
  protected rateLimitedAnswer(_req: RecordedRequest, seconds: number): FakeAnswer {
    return { status: 429, headers: { 'retry-after': String(seconds) }, json: { error: 'slow down' } };
  }
  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return { status, json: { error: 'boom' } };
  }
}

describe('NetworkHttp', () => {
  let fake: EchoFake;
  let http: NetworkHttp;

  beforeAll(async () => {
    fake = await EchoFake.start();
    http = new NetworkHttp('google_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() });
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  it('sends JSON with its content type and parses the JSON answer', async () => {
    const answer = await http.call({
      method: 'POST',
      url: `${fake.url}/echo`,
      query: { a: '1', skipped: undefined },
      headers: { 'x-one': 'yes' },
      json: { n: 1 },
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ echoed: { n: 1 } });
    const seen = fake.lastRequest('/echo');
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.headers['x-one']).toBe('yes');
    expect(seen.query).toEqual({ a: '1' });
  });

  it('sends a form body', async () => {
    await http.call({ method: 'POST', url: `${fake.url}/echo`, form: { grant_type: 'refresh_token', gone: undefined } });
    const seen = fake.lastRequest('/echo');
    expect(seen.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(seen.body).toEqual({ grant_type: 'refresh_token' });
  });

  it('keeps a body that is not JSON as text, with json undefined', async () => {
    const answer = await http.call({ method: 'GET', url: `${fake.url}/html` });
    expect(answer.status).toBe(502);
    expect(answer.json).toBeUndefined();
    expect(answer.text).toContain('bad gateway');
  });

  it('reads Retry-After into ms', async () => {
    fake.rateLimitNext(1, 7);
    const answer = await http.call({ method: 'GET', url: `${fake.url}/echo` });
    expect(answer.status).toBe(429);
    expect(answer.retryAfterMs).toBe(7_000);
  });

  it.each([
    ['says its length', '/huge'],
    ['streams it without a length', '/huge-stream'],
  ])('gives up on an answer over 4 MiB that %s: transient, read no further', async (_, path) => {
    const error = await http.call({ method: 'GET', url: `${fake.url}${path}` }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'transient', providerCode: null, message: expect.stringMatching(/more than 4 MiB/) });
    // The connection is usable again after it.
    expect((await http.call({ method: 'POST', url: `${fake.url}/echo`, json: { after: true } })).json).toEqual({ echoed: { after: true } });
  });

  it('turns a call that outlives the timeout into transient, without a provider code', async () => {
    fake.stallNext(1);
    const short = new NetworkHttp('google_ads', 300, { dispatcher: await fakeNetworkDispatcher() });
    const error = await short.call({ method: 'GET', url: `${fake.url}/echo?access_token=secret-value` }).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'transient', providerCode: null });
    expect(error.message).toContain('within 300 ms');
    expect(error.message).not.toContain('secret-value');
  });

  it('turns a refused connection into transient, without a provider code', async () => {
    const error = await http.call({ method: 'GET', url: `${await refusingLoopbackUrl()}/echo` }).catch((e) => e);
    expect(error).toMatchObject({ kind: 'transient', providerCode: null });
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('does not trust a certificate its dispatcher does not know (production: Node CA store)', async () => {
    const strict = new NetworkHttp('google_ads', 2_000);
    const error = await strict.call({ method: 'GET', url: `${fake.url}/echo` }).catch((e) => e);
    await closeNetworkConnections();
    expect(error).toMatchObject({ kind: 'transient', providerCode: null });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-25T10:00:00Z');
  it('reads delta-seconds', () => expect(parseRetryAfter('120', now)).toBe(120_000));
  it('reads an HTTP date as the time left', () => expect(parseRetryAfter('Wed, 25 Nov 2026 10:00:30 GMT', now)).toBe(30_000));
  it('never answers a negative delay for a date in the past', () => expect(parseRetryAfter('Wed, 25 Nov 2026 09:00:00 GMT', now)).toBe(0));
  it('answers null without a header or for garbage', () => {
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
  });
});
