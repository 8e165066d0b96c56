import type { UrlPolicy } from '@campaign-ops/url-guard';
import { Worker } from 'node:worker_threads';
import { SenderThreadMessage, WebhookSenderThread } from './sender-thread';
import { startPartnerReceiver, type PartnerReceiver } from './testing/partner-receiver';
import { signedDelivery } from './testing/signed-delivery';

const SECRET = 'whsec_senderThreadSpec0123456789abc';
const LOCAL: UrlPolicy = { allowHttp: true, allowPrivateNetworks: true };

describe('WebhookSenderThread', () => {
  let receiver: PartnerReceiver;
  let sender: WebhookSenderThread;

  beforeEach(async () => {
    receiver = await startPartnerReceiver({ secret: SECRET });
    sender = new WebhookSenderThread({ connectionsPerOrigin: 4 });
  });

  afterEach(async () => {
    await sender.close();
    await receiver.close();
  });

  it('sends from a thread of its own what the caller signed, and answers as WebhookSender does', async () => {
    const requests = Array.from({ length: 8 }, () => ({ url: receiver.url, ...signedDelivery(SECRET), timeoutMs: 2000, policy: LOCAL }));
    const results = await Promise.all(requests.map((request) => sender.post(request)));

    expect(results).toEqual(requests.map(() => ({ ok: true, statusCode: 200, error: null, durationMs: expect.any(Number) })));
    expect(receiver.requests().map((r) => [r.rawBody, r.signatureValid])).toEqual(expect.arrayContaining(requests.map((r) => [r.body, true])));
    // Over keep-alive connections of the thread's own pool: at most the origin's limit.
    expect(receiver.connections()).toBeLessThanOrEqual(4);
  });

  it("hands the posts of one turn of the caller's event loop to the thread in one message", async () => {
    const handOvers = jest.spyOn(Worker.prototype, 'postMessage');
    try {
      const requests = Array.from({ length: 5 }, () => ({ url: receiver.url, ...signedDelivery(SECRET), timeoutMs: 2000, policy: LOCAL }));
      const results = await Promise.all(requests.map((request) => sender.post(request)));
      expect(results.every((result) => result.ok)).toBe(true);
      expect(handOvers.mock.calls.map(([message]) => (message as SenderThreadMessage).kind)).toEqual(['posts']);
      const [[message]] = handOvers.mock.calls as unknown as Array<[Extract<SenderThreadMessage, { kind: 'posts' }>]>;
      expect(message.posts.map(({ request }) => request.body)).toEqual(requests.map((request) => request.body));
    } finally {
      handOvers.mockRestore();
    }
  });

  it('runs its thread in a small young generation', async () => {
    await sender.post({ url: receiver.url, ...signedDelivery(SECRET), timeoutMs: 2000, policy: LOCAL });
    const thread = (sender as unknown as { worker: import('node:worker_threads').Worker }).worker;
    expect(thread.resourceLimits).toMatchObject({ maxYoungGenerationSizeMb: 4 });
  });

  it('reports a refused URL as a result, not an error, and refuses posts once closed', async () => {
    const refused = await sender.post({
      url: receiver.url,
      ...signedDelivery(SECRET),
      timeoutMs: 2000,
      policy: { allowHttp: false, allowPrivateNetworks: true },
    });
    expect(refused).toMatchObject({ ok: false, statusCode: null, error: 'url_not_https' });

    await sender.close();
    await expect(sender.post({ url: receiver.url, ...signedDelivery(SECRET), timeoutMs: 2000, policy: LOCAL })).rejects.toThrow('closed');
  });
});
