import { createHmac } from 'node:crypto';
import { request } from 'node:http';
import { startPartnerReceiver, type PartnerReceiver } from './partner-receiver';
import { signedDelivery } from './signed-delivery';

const SECRET = 'whsec_partnerReceiverSpec0123456789';

type Sent = { status: number; body: string };

/** A bare HTTP client, so these tests depend on nothing but the receiver. */
function send(url: string, delivery: { body: string; headers: Record<string, string> }, method = 'POST'): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: delivery.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(delivery.body);
  });
}

describe('startPartnerReceiver', () => {
  let receiver: PartnerReceiver;

  beforeEach(async () => {
    receiver = await startPartnerReceiver({ secret: SECRET });
  });

  afterEach(async () => {
    await receiver.close();
  });

  it('listens on 127.0.0.1 at /hooks over plain http', () => {
    expect(receiver.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hooks$/);
  });

  it('accepts a delivery that follows the contract, and records it', async () => {
    const delivery = signedDelivery(SECRET, { event: 'dispatch.failed', data: { reason: 'quota' } });
    expect(await send(receiver.url, delivery)).toEqual({ status: 200, body: '{"received":true}' });

    const [recorded] = receiver.requests();
    expect(recorded).toMatchObject({
      method: 'POST',
      path: '/hooks',
      rawBody: delivery.body,
      body: JSON.parse(delivery.body),
      signatureValid: true,
      problems: [],
      status: 200,
    });
    expect(recorded.headers['x-service-delivery-id']).toBe(delivery.headers['X-SERVICE-Delivery-Id']);
    expect(recorded.receivedAt).toBeInstanceOf(Date);
    expect(receiver.events()).toEqual([recorded]);
  });

  it('accepts a charset parameter on the content type', async () => {
    const delivery = signedDelivery(SECRET, { headers: { 'Content-Type': 'application/json; charset=utf-8' } });
    expect((await send(receiver.url, delivery)).status).toBe(200);
  });

  describe('answers 400, records the problem and accepts nothing when', () => {
    const nowSeconds = () => Math.floor(Date.now() / 1000);
    const envelope = { id: 'evt_01J0000000000000000000000A', event: 'dispatch.succeeded', data: {} };
    const idHeaders = { 'X-SERVICE-Event': envelope.event, 'X-SERVICE-Event-Id': envelope.id };
    const withBody = (body: object) => ({ rawBody: JSON.stringify(body), headers: idHeaders });

    it.each([
      ['the content type is not JSON', { headers: { 'Content-Type': 'text/plain' } }, /content-type/],
      ['the content type is missing', { headers: { 'Content-Type': undefined } }, /content-type/],
      ['the charset is not UTF-8', { headers: { 'Content-Type': 'application/json; charset=latin1' } }, /content-type/],
      ['the user agent is foreign', { headers: { 'User-Agent': 'curl/8.0' } }, /user-agent/],
      ['the user agent has no version', { headers: { 'User-Agent': 'campaign-ops-webhooks/' } }, /user-agent/],
      ['the signature is missing', { headers: { 'X-SERVICE-Signature': undefined } }, /x-service-signature is missing/],
      ['the signature is malformed', { headers: { 'X-SERVICE-Signature': 'sha256=XYZ' } }, /x-service-signature must be/],
      ['the signature is uppercase', { headers: { 'X-SERVICE-Signature': 'sha256=' + 'A'.repeat(64) } }, /x-service-signature must be/],
      ['the timestamp is missing', { headers: { 'X-SERVICE-Timestamp': undefined } }, /x-service-timestamp is missing/],
      ['the timestamp is in milliseconds', { headers: { 'X-SERVICE-Timestamp': String(Date.now()) } }, /x-service-timestamp/],
      ['the timestamp is not an integer', { headers: { 'X-SERVICE-Timestamp': '1714564800.5' } }, /integer unix seconds/],
      ['the timestamp is 6 minutes old', { headers: { 'X-SERVICE-Timestamp': String(nowSeconds() - 360) } }, /from now/],
      ['the timestamp is 6 minutes ahead', { headers: { 'X-SERVICE-Timestamp': String(nowSeconds() + 360) } }, /from now/],
      ['the event header is missing', { headers: { 'X-SERVICE-Event': undefined } }, /x-service-event is missing/],
      ['the event header differs from the body', { headers: { 'X-SERVICE-Event': 'other.event' } }, /x-service-event .* differs/],
      ['the event id header is missing', { headers: { 'X-SERVICE-Event-Id': undefined } }, /x-service-event-id is missing/],
      ['the event id header differs', { headers: { 'X-SERVICE-Event-Id': 'evt_other' } }, /x-service-event-id .* differs/],
      ['the delivery id is missing', { headers: { 'X-SERVICE-Delivery-Id': undefined } }, /x-service-delivery-id is missing/],
      ['the delivery id has the wrong prefix', { headers: { 'X-SERVICE-Delivery-Id': 'del_123' } }, /x-service-delivery-id must/],
      ['the body is not JSON', { rawBody: 'id=evt_1', headers: idHeaders }, /body is not JSON/],
      ['the body is a JSON array', { rawBody: '[]', headers: idHeaders }, /body must be a JSON object/],
      ['body.id lacks the evt_ prefix', withBody({ ...envelope, id: '123', timestamp: new Date().toISOString() }), /body\.id/],
      ['body.event is empty', withBody({ ...envelope, event: '', timestamp: new Date().toISOString() }), /body\.event/],
      ['body.timestamp is missing', withBody(envelope), /body\.timestamp/],
      ['body.timestamp has no milliseconds', withBody({ ...envelope, timestamp: '2024-05-01T12:00:00Z' }), /body\.timestamp/],
      ['body.timestamp is not UTC', withBody({ ...envelope, timestamp: '2024-05-01T12:00:00.000+02:00' }), /body\.timestamp/],
      ['body.timestamp is unix seconds', withBody({ ...envelope, timestamp: 1714564800 }), /body\.timestamp/],
      ['body.timestamp is an impossible date', withBody({ ...envelope, timestamp: '2024-02-30T12:00:00.000Z' }), /body\.timestamp/],
      ['body.data is missing', withBody({ id: envelope.id, event: envelope.event, timestamp: new Date().toISOString() }), /body\.data/],
      ['body.data is not an object', withBody({ ...envelope, timestamp: new Date().toISOString(), data: 'x' }), /body\.data/],
    ])('%s', async (_label, options, problem) => {
      const delivery = signedDelivery(SECRET, options);
      const answer = await send(receiver.url, delivery);

      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body).problems).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
      const [recorded] = receiver.requests();
      expect(recorded.status).toBe(400);
      expect(recorded.problems).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
      expect(receiver.events()).toEqual([]);
    });

    it('the method is not POST', async () => {
      const answer = await send(receiver.url, signedDelivery(SECRET), 'PUT');
      expect(answer.status).toBe(400);
      expect(receiver.requests()[0].problems).toContain('method must be POST, got PUT');
    });

    it('the path is not /hooks', async () => {
      const answer = await send(receiver.url.replace('/hooks', '/other'), signedDelivery(SECRET));
      expect(answer.status).toBe(400);
      expect(receiver.requests()[0].problems).toContain('path must be /hooks, got /other');
    });

    it('the body was changed after signing', async () => {
      const delivery = signedDelivery(SECRET);
      const tampered = { ...delivery, body: delivery.body.replace('dispatch.succeeded', 'dispatch.succeedeD') };
      tampered.headers['X-SERVICE-Event'] = 'dispatch.succeedeD';
      expect((await send(receiver.url, tampered)).status).toBe(400);
      expect(receiver.requests()[0]).toMatchObject({
        signatureValid: false,
        problems: ['x-service-signature does not verify against any registered secret'],
      });
    });

    it('the signature was made with another secret', async () => {
      expect((await send(receiver.url, signedDelivery('whsec_someoneElse'))).status).toBe(400);
      expect(receiver.requests()[0].signatureValid).toBe(false);
    });
  });

  describe('secrets', () => {
    it('can be registered after start; until then nothing verifies', async () => {
      const late = await startPartnerReceiver();
      try {
        expect((await send(late.url, signedDelivery(SECRET))).status).toBe(400);
        expect(late.requests()[0].problems).toContain('no secret registered to verify x-service-signature');
        late.setSecret(SECRET);
        expect((await send(late.url, signedDelivery(SECRET))).status).toBe(200);
      } finally {
        await late.close();
      }
    });

    it('may be several at once, as during a rotation', async () => {
      receiver.addSecret('whsec_next');
      expect((await send(receiver.url, signedDelivery(SECRET))).status).toBe(200);
      expect((await send(receiver.url, signedDelivery('whsec_next'))).status).toBe(200);
    });

    it('are all replaced by setSecret', async () => {
      receiver.setSecret('whsec_next');
      expect((await send(receiver.url, signedDelivery(SECRET))).status).toBe(400);
      expect((await send(receiver.url, signedDelivery('whsec_next'))).status).toBe(200);
    });

    it('are checked independently of our signing code', async () => {
      // Signed here by hand from the contract, not by signBody.
      const delivery = signedDelivery(SECRET);
      delivery.headers['X-SERVICE-Signature'] = `sha256=${createHmac('sha256', SECRET).update(delivery.body).digest('hex')}`;
      expect((await send(receiver.url, delivery)).status).toBe(200);
    });
  });

  it('fails the next well-formed deliveries on request, and does not accept them', async () => {
    receiver.failNext(2, 503);
    const delivery = signedDelivery(SECRET);
    expect((await send(receiver.url, signedDelivery('whsec_wrong'))).status).toBe(400); // does not use up a failure
    expect((await send(receiver.url, delivery)).status).toBe(503);
    expect((await send(receiver.url, delivery)).status).toBe(503);
    expect((await send(receiver.url, delivery)).status).toBe(200);
    receiver.failNext(1);
    expect((await send(receiver.url, signedDelivery(SECRET))).status).toBe(500);
    expect(receiver.events().map((event) => event.body.id)).toEqual([JSON.parse(delivery.body).id]);
  });

  it('answers late on request', async () => {
    receiver.delayNext(1, 500);
    const started = Date.now();
    expect((await send(receiver.url, signedDelivery(SECRET))).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(490);
    const again = Date.now();
    await send(receiver.url, signedDelivery(SECRET));
    expect(Date.now() - again).toBeLessThan(490);
  });

  it('lists every request but each accepted event once, like a partner that de-duplicates by id', async () => {
    const first = signedDelivery(SECRET);
    // A retry: same event, new delivery id.
    const retry = { body: first.body, headers: { ...first.headers, 'X-SERVICE-Delivery-Id': 'dlv_retry' } };
    const other = signedDelivery(SECRET);
    await send(receiver.url, first);
    await send(receiver.url, retry);
    await send(receiver.url, other);

    expect(receiver.requests()).toHaveLength(3);
    expect(receiver.events().map((event) => event.headers['x-service-delivery-id'])).toEqual([
      first.headers['X-SERVICE-Delivery-Id'],
      other.headers['X-SERVICE-Delivery-Id'],
    ]);
  });

  describe('waitFor', () => {
    it('resolves with the matching events once they arrive', async () => {
      const waiting = receiver.waitFor((event) => event.body.event === 'dispatch.failed', 2000, 2);
      await send(receiver.url, signedDelivery(SECRET, { event: 'dispatch.failed' }));
      await send(receiver.url, signedDelivery(SECRET, { event: 'dispatch.succeeded' }));
      await send(receiver.url, signedDelivery(SECRET, { event: 'dispatch.failed' }));
      const events = await waiting;
      expect(events.map((event) => event.body.event)).toEqual(['dispatch.failed', 'dispatch.failed']);
    });

    it('resolves at once when the events are already there', async () => {
      await send(receiver.url, signedDelivery(SECRET));
      await expect(receiver.waitFor(() => true, 50)).resolves.toHaveLength(1);
    });

    it('rejects after the timeout, listing what was received and why it was refused', async () => {
      await send(receiver.url, signedDelivery('whsec_wrong', { event: 'dispatch.failed' }));
      await send(receiver.url, signedDelivery(SECRET, { event: 'dispatch.succeeded' }));
      const error = await receiver.waitFor((event) => event.body.event === 'dispatch.failed', 100).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      const message = (error as Error).message;
      expect(message).toContain('wanted 1 accepted webhook(s) matching the predicate within 100 ms, found 0');
      expect(message).toContain('Received 2 request(s)');
      expect(message).toMatch(/1\. 400 POST \/hooks event=dispatch\.failed id=evt_\S+ delivery=dlv_\S+ problems: x-service-signature does not verify/);
      expect(message).toMatch(/2\. 200 POST \/hooks event=dispatch\.succeeded/);
    });

    it('says so when nothing at all arrived', async () => {
      await expect(receiver.waitFor(() => true, 20)).rejects.toThrow('Received no requests.');
    });

    it('is rejected by close', async () => {
      const waiting = receiver.waitFor(() => true, 10_000);
      const closing = receiver.close();
      await expect(waiting).rejects.toThrow('the receiver was closed');
      await closing;
      receiver = await startPartnerReceiver(); // for afterEach
    });
  });

  it('closes promptly even with an answer still delayed', async () => {
    receiver.delayNext(1, 60_000);
    const pending = send(receiver.url, signedDelivery(SECRET)).catch((e: NodeJS.ErrnoException) => e.code);
    await receiver.waitFor(() => true, 2000);
    const started = Date.now();
    await receiver.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await pending).toBe('ECONNRESET');
    receiver = await startPartnerReceiver(); // for afterEach
  });
});
