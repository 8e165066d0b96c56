import { checkRedirectUri, withQuery } from './redirect-uri';

const REGISTERED = ['https://partner.example/back', 'https://partner.example:8443/oauth/done', 'http://localhost:3000/back'];
const live = { mode: 'live' as const, registered: REGISTERED };

describe("the partner's redirect_uri", () => {
  it.each(['https://partner.example/back', 'https://partner.example:8443/oauth/done?tenant=7', 'http://localhost:3000/back?x=1'])(
    "takes %s, registered (its query is the partner's own)",
    (uri) => expect(checkRedirectUri(uri, live)).toMatchObject({ ok: true }),
  );

  it.each([
    ['another site', 'https://evil.example/back'],
    ['another path', 'https://partner.example/back/../elsewhere'],
    ['another path, sharing a prefix', 'https://partner.example/backdoor'],
    ['another port', 'https://partner.example:444/back'],
    ['another scheme of a registered localhost', 'http://localhost:3001/back'],
    ['a subdomain', 'https://evil.partner.example/back'],
  ])('refuses %s with redirect_uri_not_registered: our callback never sends a person where the account did not say', (_, uri) =>
    expect(checkRedirectUri(uri, live)).toMatchObject({ ok: false, error: { code: 'redirect_uri_not_registered', param: 'redirect_uri' } }),
  );

  it('refuses every redirect_uri of an account that registered none', () =>
    expect(checkRedirectUri('https://partner.example/back', { mode: 'live', registered: [] })).toMatchObject({
      ok: false,
      error: { code: 'redirect_uri_not_registered' },
    }));

  it.each(['http://localhost:3000/back', 'http://127.0.0.1:8080/', 'http://[::1]:9000/x'])(
    'takes any http://localhost URL %s from a test key, registered or not',
    (uri) => {
      expect(checkRedirectUri(uri, { mode: 'test', registered: [] })).toMatchObject({ ok: true });
      expect(checkRedirectUri('https://partner.example/back', { mode: 'test', registered: [] })).toMatchObject({
        ok: false,
        error: { code: 'redirect_uri_not_registered' },
      });
    },
  );

  it.each([
    ['http://partner.example/back', 'url_not_https'],
    ['http://localhost.partner.example/back', 'url_not_https'],
    ['ftp://partner.example/back', 'url_not_https'],
    ['javascript:alert(1)', 'url_not_https'],
    ['partner.example/back', 'url_invalid'],
    ['', 'url_invalid'],
    ['https://partner.example/back#frag', 'url_invalid'],
    ['https://user:pw@partner.example/back', 'url_invalid'],
  ])('refuses %s with %s, naming redirect_uri', (uri, code) =>
    expect(checkRedirectUri(uri, live)).toMatchObject({ ok: false, error: { code, param: 'redirect_uri' } }),
  );

  it("adds to the query and keeps the partner's own parameters", () => {
    expect(withQuery('https://partner.example/back?tenant=7', { connection_id: 'con_1', status: 'active' })).toBe(
      'https://partner.example/back?tenant=7&connection_id=con_1&status=active',
    );
    expect(withQuery('https://partner.example/back', { error: 'state_invalid' })).toBe('https://partner.example/back?error=state_invalid');
    expect(withQuery('https://partner.example/back?error=x', { error: 'access_denied' })).toBe('https://partner.example/back?error=access_denied');
  });
});
