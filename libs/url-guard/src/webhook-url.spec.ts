import { checkWebhookUrl, MAX_WEBHOOK_URL_LENGTH, precheckWebhookUrl, type ResolveHost } from './webhook-url';
import type { UrlPolicy } from './policy';

const production: UrlPolicy = { allowHttp: false, allowPrivateNetworks: false };
const development: UrlPolicy = { allowHttp: true, allowPrivateNetworks: true };

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';

/** A resolver from a fixed table; unknown names do not resolve. Records what it was asked. */
function fakeResolver(table: Record<string, string[]>): ResolveHost & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (host: string) => {
    asked.push(host);
    const answer = table[host];
    if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answer;
  };
  return Object.assign(resolve, { asked });
}

const publicDns = fakeResolver({ 'partner.example.com': [PUBLIC_V4, PUBLIC_V6] });

const neverCalled: ResolveHost = async (host) => {
  throw new Error(`the resolver must not be asked about ${host}`);
};

describe('checkWebhookUrl', () => {
  it('accepts a public https URL and returns it parsed', async () => {
    const result = await checkWebhookUrl('https://partner.example.com:8443/hooks/in?x=1', production, publicDns);
    expect(result).toEqual({ ok: true, url: new URL('https://partner.example.com:8443/hooks/in?x=1') });
  });

  it('asks the resolver for the bare host name, without port or trailing dot', async () => {
    const resolve = fakeResolver({ 'partner.example.com': [PUBLIC_V4] });
    await checkWebhookUrl('https://Partner.Example.com.:8443/hooks', production, resolve);
    expect(resolve.asked).toEqual(['partner.example.com']);
  });

  describe('url_invalid', () => {
    it.each([
      ['undefined', undefined],
      ['null', null],
      ['a number', 42],
      ['an object', { href: 'https://partner.example.com/' }],
      ['a URL instance', new URL('https://partner.example.com/')],
    ])('when the value is %s rather than a string', async (_label, raw) => {
      expect(await checkWebhookUrl(raw, production, neverCalled)).toMatchObject({ ok: false, code: 'url_invalid' });
    });

    it.each([
      ['empty', ''],
      ['prose', 'not a url'],
      ['relative', '/hooks'],
      ['scheme only', 'https://'],
      ['bad port', 'https://partner.example.com:99999/'],
      ['space in host', 'https://partner example.com/'],
    ])('when it does not parse (%s)', async (_label, raw) => {
      expect(await checkWebhookUrl(raw, production, neverCalled)).toMatchObject({ ok: false, code: 'url_invalid' });
    });

    it(`when longer than ${MAX_WEBHOOK_URL_LENGTH} characters, and not at exactly that length`, async () => {
      const base = 'https://partner.example.com/';
      const atLimit = base + 'a'.repeat(MAX_WEBHOOK_URL_LENGTH - base.length);
      expect(await checkWebhookUrl(atLimit, production, publicDns)).toMatchObject({ ok: true });
      expect(await checkWebhookUrl(atLimit + 'a', production, publicDns)).toMatchObject({ ok: false, code: 'url_invalid' });
    });

    it.each(['https://alice:s3cr3t-pa55@partner.example.com/', 'https://alice@partner.example.com/', 'https://:s3cr3t-pa55@partner.example.com/'])(
      'when it carries credentials (%s), without echoing them',
      async (raw) => {
        // The host itself is fine: only the credentials are wrong.
        const result = await checkWebhookUrl(raw, production, publicDns);
        expect(result).toMatchObject({ ok: false, code: 'url_invalid' });
        expect(JSON.stringify(result)).not.toMatch(/s3cr3t|alice/);
      },
    );

    it('when the host does not resolve', async () => {
      expect(await checkWebhookUrl('https://nowhere.example.com/', production, publicDns)).toEqual({
        ok: false,
        code: 'url_invalid',
        message: 'host does not resolve',
      });
    });

    it('when the resolver answers with no address at all', async () => {
      const empty = fakeResolver({ 'partner.example.com': [] });
      expect(await checkWebhookUrl('https://partner.example.com/', production, empty)).toMatchObject({
        ok: false,
        code: 'url_invalid',
        message: 'host does not resolve',
      });
    });

    it('when the host does not resolve, even if private networks are allowed', async () => {
      expect(await checkWebhookUrl('http://nowhere.example.com/', development, publicDns)).toMatchObject({
        ok: false,
        code: 'url_invalid',
      });
    });
  });

  describe('url_not_https', () => {
    it.each(['http://partner.example.com/', 'ftp://partner.example.com/', 'ws://partner.example.com/', 'javascript:alert(1)', 'file:///etc/passwd'])(
      'for %s when http is not allowed',
      async (raw) => {
        expect(await checkWebhookUrl(raw, production, neverCalled)).toMatchObject({ ok: false, code: 'url_not_https' });
      },
    );

    it('for schemes other than http even when http is allowed', async () => {
      const policy = { allowHttp: true, allowPrivateNetworks: false };
      expect(await checkWebhookUrl('ftp://partner.example.com/', policy, neverCalled)).toMatchObject({ code: 'url_not_https' });
      expect(await checkWebhookUrl('http://partner.example.com/', policy, publicDns)).toMatchObject({ ok: true });
    });
  });

  describe('url_forbidden_host', () => {
    it.each([
      ['https://127.0.0.1/', 'loopback literal'],
      ['https://127.0.0.1:8443/hooks', 'loopback literal with port'],
      ['https://2130706433/', 'loopback as one decimal number'],
      ['https://0x7f.1/', 'loopback in hex shorthand'],
      ['https://017700000001/', 'loopback in octal'],
      ['https://0.0.0.0/', '"this host"'],
      ['https://10.0.0.5/', 'private'],
      ['https://169.254.169.254/latest/meta-data/', 'cloud metadata'],
      ['https://[::1]/', 'IPv6 loopback'],
      ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped loopback'],
      ['https://[fd00:ec2::254]/', 'AWS IPv6 metadata'],
      ['https://[fe80::1]/', 'IPv6 link-local'],
    ])('for an IP-literal host: %s (%s), without asking DNS', async (raw) => {
      expect(await checkWebhookUrl(raw, production, neverCalled)).toMatchObject({ ok: false, code: 'url_forbidden_host' });
    });

    it.each([
      ['https://localhost/', 'localhost'],
      ['https://LOCALHOST:8443/', 'uppercase'],
      ['https://localhost./', 'with the root dot'],
      ['https://api.localhost/', 'a subdomain of localhost'],
      ['https://metadata.google.internal/computeMetadata/v1/', 'GCP metadata'],
      ['https://db.corp.internal/', 'the .internal private-use TLD'],
      ['https://printer.local/', 'mDNS'],
    ])('for a reserved host name: %s (%s), without asking DNS', async (raw) => {
      expect(await checkWebhookUrl(raw, production, neverCalled)).toMatchObject({ ok: false, code: 'url_forbidden_host' });
    });

    it.each([
      ['to loopback', ['127.0.0.1']],
      ['to metadata', ['169.254.169.254']],
      ['to IPv6 loopback', ['::1']],
      ['to an IPv4-mapped private address', ['::ffff:192.168.1.10']],
      ['partly to a private address', [PUBLIC_V4, '10.0.0.7']],
      ['partly to a private IPv6 address', [PUBLIC_V6, 'fd12:3456::1']],
    ])('for a name that resolves %s', async (_label, addresses) => {
      const resolve = fakeResolver({ 'partner.example.com': addresses });
      expect(await checkWebhookUrl('https://partner.example.com/', production, resolve)).toMatchObject({
        ok: false,
        code: 'url_forbidden_host',
      });
    });

    it('without revealing the URL query or the addresses the name resolved to', async () => {
      const resolve = fakeResolver({ 'partner.example.com': ['10.20.30.40'] });
      const result = await checkWebhookUrl('https://partner.example.com/hook?token=tok_s3cr3t', production, resolve);
      expect(result.ok).toBe(false);
      expect(JSON.stringify(result)).not.toMatch(/tok_s3cr3t|10\.20\.30\.40/);
    });
  });

  describe('with private networks allowed', () => {
    it.each([
      'http://127.0.0.1:3000/hooks',
      'http://[::1]:3000/hooks',
      'https://169.254.169.254/',
      'https://metadata.google.internal/',
      'https://rebound.example.com/',
    ])('accepts %s', async (raw) => {
      const resolve = fakeResolver({ 'metadata.google.internal': ['169.254.169.254'], 'rebound.example.com': ['127.0.0.1'] });
      expect(await checkWebhookUrl(raw, development, resolve)).toMatchObject({ ok: true });
    });
  });

  it('uses the system resolver by default (localhost comes from /etc/hosts)', async () => {
    expect(await checkWebhookUrl('http://localhost:3000/hooks', development)).toMatchObject({ ok: true });
  });
});

describe('precheckWebhookUrl', () => {
  it('judges scheme, reserved names and IP literals without any DNS', () => {
    expect(precheckWebhookUrl('https://partner.example.com/hooks', production)).toMatchObject({ ok: true });
    expect(precheckWebhookUrl('http://partner.example.com/hooks', production)).toMatchObject({ code: 'url_not_https' });
    expect(precheckWebhookUrl('https://localhost/hooks', production)).toMatchObject({ code: 'url_forbidden_host' });
    expect(precheckWebhookUrl('https://[::ffff:a9fe:a9fe]/', production)).toMatchObject({ code: 'url_forbidden_host' });
    expect(precheckWebhookUrl('https://user:pw@partner.example.com/', production)).toMatchObject({ code: 'url_invalid' });
  });
});
