import { checkRedirectUri, withQuery } from './redirect-uri';

describe("the partner's redirect_uri", () => {
  it.each(['https://partner.example/back', 'https://partner.example:8443/oauth/done?tenant=7', 'http://localhost:3000/back', 'http://127.0.0.1:8080/', 'http://[::1]:9000/x'])('takes %s', (uri) =>
    expect(checkRedirectUri(uri)).toMatchObject({ ok: true }));

  it.each([
    ['http://partner.example/back', 'url_not_https'],
    ['http://localhost.partner.example/back', 'url_not_https'],
    ['ftp://partner.example/back', 'url_not_https'],
    ['javascript:alert(1)', 'url_not_https'],
    ['partner.example/back', 'url_invalid'],
    ['', 'url_invalid'],
    ['https://partner.example/back#frag', 'url_invalid'],
    ['https://user:pw@partner.example/back', 'url_invalid'],
  ])('refuses %s with %s, naming redirect_uri', (uri, code) => expect(checkRedirectUri(uri)).toMatchObject({ ok: false, error: { code, param: 'redirect_uri' } }));

  it("adds to the query and keeps the partner's own parameters", () => {
    expect(withQuery('https://partner.example/back?tenant=7', { connection_id: 'con_1', status: 'active' })).toBe('https://partner.example/back?tenant=7&connection_id=con_1&status=active');
    expect(withQuery('https://partner.example/back', { error: 'state_invalid' })).toBe('https://partner.example/back?error=state_invalid');
    expect(withQuery('https://partner.example/back?error=x', { error: 'access_denied' })).toBe('https://partner.example/back?error=access_denied');
  });
});
