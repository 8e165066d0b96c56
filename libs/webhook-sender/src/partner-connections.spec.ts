import dns, { type LookupAddress } from 'node:dns';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UrlPolicy } from '@campaign-ops/url-guard';
import { WebhookSender, type WebhookRequest } from './post-webhook';
import { startPartnerReceiver, type PartnerReceiver } from './testing/partner-receiver';
import { signedDelivery } from './testing/signed-delivery';
import { createTestCertificates, type TestCertificates } from './testing/test-ca';

const SECRET = 'whsec_partnerConnectionsSpec0123456789';
/** A partner's host name; the fake DNS below answers 127.0.0.1 for it. */
const PARTNER_HOST = 'hooks.partner.example';
const STRICT: UrlPolicy = { allowHttp: true, allowPrivateNetworks: false };
const PERMISSIVE: UrlPolicy = { allowHttp: true, allowPrivateNetworks: true };

/**
 * The world these tests run in: loopback counts as a public address until the partner's name is
 * "rebound" (its DNS now points inside our network). The guard itself is the real one; only what
 * it deems private changes, so that a connection can first be allowed, pooled, and then refused.
 */
const world = { loopbackIsPublic: false };
jest.mock('@campaign-ops/url-guard', () => {
  const actual = jest.requireActual('@campaign-ops/url-guard');
  return {
    ...actual,
    guardedLookup:
      (policy: UrlPolicy, base: Parameters<typeof actual.guardedLookup>[1]) =>
      (...args: Parameters<ReturnType<typeof actual.guardedLookup>>) =>
        actual.guardedLookup({ allowPrivateNetworks: policy.allowPrivateNetworks || world.loopbackIsPublic }, base)(...args),
  };
});

describe('WebhookSender connections', () => {
  let sender: WebhookSender;

  beforeAll(() => {
    const realLookup = dns.lookup;
    jest.spyOn(dns, 'lookup').mockImplementation(((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
      if (hostname !== PARTNER_HOST) return (realLookup as Function)(hostname, options, callback);
      const answer: LookupAddress[] = [{ address: '127.0.0.1', family: 4 }];
      setImmediate(() => (options.all ? callback(null, answer) : callback(null, answer[0].address, answer[0].family)));
    }) as unknown as typeof dns.lookup);
  });

  afterAll(() => jest.restoreAllMocks());

  beforeEach(() => {
    world.loopbackIsPublic = false;
    sender = new WebhookSender();
  });

  afterEach(() => sender.close());

  const deliveryTo = (url: string, overrides: Partial<WebhookRequest> = {}): WebhookRequest => ({
    url,
    ...signedDelivery(SECRET),
    timeoutMs: 2000,
    policy: PERMISSIVE,
    ...overrides,
  });

  describe('over https', () => {
    let dir: string;
    let certs: TestCertificates;
    let receiver: PartnerReceiver;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'partner-connections-'));
      certs = await createTestCertificates(dir);
    });

    beforeEach(async () => {
      receiver = await startPartnerReceiver({ tls: { key: certs.key, cert: certs.cert }, secret: SECRET });
    });

    afterEach(() => receiver.close());
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('reuses a TLS connection: at most one handshake per 50 deliveries to one origin', async () => {
      const one = () => sender.post(deliveryTo(receiver.url, { ca: certs.caCert }));
      for (let i = 0; i < 50; i++) expect(await one()).toMatchObject({ ok: true });
      expect(receiver.connections()).toBe(1);
      // And side by side, four at a time: four connections at the most.
      for (let round = 0; round < 50; round++) {
        const results = await Promise.all([one(), one(), one(), one()]);
        expect(results.every((result) => result.ok)).toBe(true);
      }

      expect(receiver.events()).toHaveLength(250);
      expect(receiver.connections()).toBeLessThanOrEqual(250 / 50);
    });

    it('closes its connections on close, and opens a new one for a later delivery', async () => {
      expect(await sender.post(deliveryTo(receiver.url, { ca: certs.caCert }))).toMatchObject({ ok: true });
      await sender.close();
      expect(await sender.post(deliveryTo(receiver.url, { ca: certs.caCert }))).toMatchObject({ ok: true });
      expect(receiver.connections()).toBe(2);
    });
  });

  describe('and the SSRF guard', () => {
    let receiver: PartnerReceiver;
    let url: string;

    beforeEach(async () => {
      receiver = await startPartnerReceiver({ secret: SECRET });
      url = `http://${PARTNER_HOST}:${new URL(receiver.url).port}/hooks`;
    });

    afterEach(() => receiver.close());

    it('judges every new connection, though one to the same origin is pooled', async () => {
      world.loopbackIsPublic = true;
      for (let i = 0; i < 3; i++) expect(await sender.post(deliveryTo(url, { policy: STRICT }))).toMatchObject({ ok: true });
      expect(receiver.connections()).toBe(1);

      world.loopbackIsPublic = false; // the name now points inside
      // Two at once: one may take the pooled connection (judged when it was opened), the other
      // needs a new one, which the guard refuses before it is made.
      const results = await Promise.all([sender.post(deliveryTo(url, { policy: STRICT })), sender.post(deliveryTo(url, { policy: STRICT }))]);

      expect(results.map((result) => result.error).sort()).toEqual(['forbidden_host', null]);
      expect(receiver.connections()).toBe(1);
      expect(receiver.requests()).toHaveLength(4);
    });

    it('never lends a connection opened under a permissive policy to a stricter one', async () => {
      expect(await sender.post(deliveryTo(url, { policy: PERMISSIVE }))).toMatchObject({ ok: true });

      expect(await sender.post(deliveryTo(url, { policy: STRICT }))).toMatchObject({ ok: false, statusCode: null, error: 'forbidden_host' });
      expect(receiver.requests()).toHaveLength(1);
    });
  });
});
