import { createServer, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UrlPolicy } from '@campaign-ops/url-guard';
import { MAX_RESPONSE_BYTES, postWebhook, type WebhookRequest } from './post-webhook';
import { startPartnerReceiver, type PartnerReceiver } from './testing/partner-receiver';
import { signedDelivery } from './testing/signed-delivery';
import { createTestCertificates, type TestCertificates } from './testing/test-ca';

const SECRET = 'whsec_postWebhookSpec0123456789abcd';
// Tests talk to 127.0.0.1, which production refuses; each test says which rule it relaxes.
const LOCAL: UrlPolicy = { allowHttp: true, allowPrivateNetworks: true };

function deliveryTo(url: string, overrides: Partial<WebhookRequest> = {}): WebhookRequest {
  return { url, ...signedDelivery(SECRET), timeoutMs: 2000, policy: LOCAL, ...overrides };
}

/** A bare local server for behaviour the well-behaved fake partner does not have. */
async function startServer(handler: (res: ServerResponse) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    handler(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('postWebhook', () => {
  describe('over http, to the fake partner', () => {
    let receiver: PartnerReceiver;

    beforeEach(async () => {
      receiver = await startPartnerReceiver({ secret: SECRET });
    });

    afterEach(async () => {
      await receiver.close();
    });

    it('delivers a signed webhook the partner accepts', async () => {
      const request = deliveryTo(receiver.url);
      const result = await postWebhook(request);

      expect(result).toEqual({ ok: true, statusCode: 200, error: null, durationMs: expect.any(Number) });
      const [received] = receiver.requests();
      expect(received).toMatchObject({ rawBody: request.body, signatureValid: true, problems: [] });
      expect(received.headers['content-length']).toBe(String(Buffer.byteLength(request.body)));
      expect(receiver.events()).toHaveLength(1);
    });

    it('sends the body as UTF-8 bytes with their length, whatever length the caller claims', async () => {
      const request = deliveryTo(receiver.url, signedDelivery(SECRET, { data: { note: 'café — ✓ 日本' } }));
      request.headers['content-length'] = '1';
      expect(await postWebhook(request)).toMatchObject({ ok: true });
      expect(receiver.requests()[0]).toMatchObject({ rawBody: request.body, signatureValid: true });
    });

    it('reports a partner error status as a failure', async () => {
      receiver.failNext(1, 503);
      expect(await postWebhook(deliveryTo(receiver.url))).toMatchObject({ ok: false, statusCode: 503, error: 'http_503' });
    });

    it('reports the partner refusing a bad signature', async () => {
      const result = await postWebhook(deliveryTo(receiver.url, signedDelivery('whsec_wrong')));
      expect(result).toMatchObject({ ok: false, statusCode: 400, error: 'http_400' });
      expect(receiver.requests()[0]).toMatchObject({
        signatureValid: false,
        problems: ['x-service-signature does not verify against any registered secret'],
      });
      expect(receiver.events()).toEqual([]);
    });

    it('gives up at the timeout when the partner answers too late', async () => {
      receiver.delayNext(1, 5000);
      const result = await postWebhook(deliveryTo(receiver.url, { timeoutMs: 200 }));
      expect(result).toMatchObject({ ok: false, statusCode: null, error: 'timeout' });
      expect(result.durationMs).toBeGreaterThanOrEqual(190);
      expect(result.durationMs).toBeLessThan(1500);
    });

    it('does not follow a redirect, even to a willing partner', async () => {
      const redirecting = await startServer((res) => res.writeHead(307, { location: receiver.url }).end());
      try {
        const result = await postWebhook(deliveryTo(redirecting.url));
        expect(result).toMatchObject({ ok: false, statusCode: 307, error: 'http_307' });
        expect(receiver.requests()).toEqual([]);
      } finally {
        await redirecting.close();
      }
    });

    describe('under a stricter policy', () => {
      it('refuses a loopback IP before connecting', async () => {
        const policy = { allowHttp: true, allowPrivateNetworks: false };
        const result = await postWebhook(deliveryTo(receiver.url, { policy }));
        expect(result).toMatchObject({ ok: false, statusCode: null, error: 'forbidden_host' });
        expect(receiver.requests()).toEqual([]);
      });

      it('refuses localhost before connecting', async () => {
        const policy = { allowHttp: true, allowPrivateNetworks: false };
        const url = receiver.url.replace('127.0.0.1', 'localhost');
        expect(await postWebhook(deliveryTo(url, { policy }))).toMatchObject({ ok: false, error: 'forbidden_host' });
        expect(receiver.requests()).toEqual([]);
      });

      it('refuses plain http when http is not allowed', async () => {
        const policy = { allowHttp: false, allowPrivateNetworks: true };
        expect(await postWebhook(deliveryTo(receiver.url, { policy }))).toMatchObject({ ok: false, error: 'url_not_https' });
        expect(receiver.requests()).toEqual([]);
      });
    });
  });

  describe('over https', () => {
    let dir: string;
    let certs: TestCertificates;
    let receiver: PartnerReceiver;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'post-webhook-'));
      certs = await createTestCertificates(dir);
      receiver = await startPartnerReceiver({ tls: { key: certs.key, cert: certs.cert }, secret: SECRET });
    });

    afterAll(async () => {
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('delivers to a partner whose certificate chains to a trusted CA', async () => {
      expect(receiver.url).toMatch(/^https:\/\/localhost:\d+\/hooks$/);
      const policy = { allowHttp: false, allowPrivateNetworks: true };
      const result = await postWebhook(deliveryTo(receiver.url, { policy, ca: certs.caCert }));
      expect(result).toMatchObject({ ok: true, statusCode: 200, error: null });
      expect(receiver.events()).toHaveLength(1);
    });

    it('verifies the certificate: an untrusted one fails the delivery before anything is sent', async () => {
      const before = receiver.requests().length;
      const result = await postWebhook(deliveryTo(receiver.url, { policy: LOCAL }));
      expect(result).toMatchObject({ ok: false, statusCode: null, error: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
      expect(receiver.requests()).toHaveLength(before);
    });
  });

  describe('against misbehaving servers', () => {
    it('reports a refused connection', async () => {
      const closed = await startServer((res) => res.end());
      await closed.close(); // the port is now free, so connecting is refused
      expect(await postWebhook(deliveryTo(closed.url))).toMatchObject({ ok: false, statusCode: null, error: 'ECONNREFUSED' });
    });

    it('counts the status of a 2xx whose body never ends, returning at the deadline', async () => {
      const stalling = await startServer((res) => {
        res.writeHead(202);
        res.write('partial'); // and never end
      });
      try {
        const result = await postWebhook(deliveryTo(stalling.url, { timeoutMs: 300 }));
        expect(result).toMatchObject({ ok: true, statusCode: 202, error: null });
        expect(result.durationMs).toBeGreaterThanOrEqual(290);
        expect(result.durationMs).toBeLessThan(1500);
      } finally {
        await stalling.close();
      }
    });

    it(`stops reading a response body after ${MAX_RESPONSE_BYTES} bytes and hangs up`, async () => {
      let written = 0;
      let hungUp!: () => void;
      const hangUp = new Promise<void>((resolve) => (hungUp = resolve));
      const flooding = await startServer((res) => {
        res.writeHead(200);
        const chunk = Buffer.alloc(16 * 1024, 'x');
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) written += chunk.length;
        };
        res.on('drain', pump);
        res.on('close', hungUp);
        pump();
      });
      try {
        const result = await postWebhook(deliveryTo(flooding.url, { timeoutMs: 5000 }));
        expect(result).toMatchObject({ ok: true, statusCode: 200 });
        expect(result.durationMs).toBeLessThan(2000);
        await hangUp; // the server saw us close the connection
        expect(written).toBeLessThan(64 * 1024 * 1024);
      } finally {
        await flooding.close();
      }
    });
  });

  it('refuses a malformed URL without sending', async () => {
    expect(await postWebhook(deliveryTo('not a url'))).toMatchObject({ ok: false, statusCode: null, error: 'url_invalid' });
  });

  it('rejects a non-positive timeout as a programming error', async () => {
    await expect(postWebhook(deliveryTo('http://127.0.0.1:1/hooks', { timeoutMs: 0 }))).rejects.toThrow(RangeError);
  });
});
