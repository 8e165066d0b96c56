import type { Mode } from '@campaign-ops/account-domain';
import { failure, Outcome, success } from '@campaign-ops/api-errors';

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The partner's `redirect_uri`, where the person's browser goes back after the consent: https,
 * or http on the person's own machine (localhost, for partners' development). No fragment (the
 * query is what we add to) and no credentials in it. Its origin and path must be those of one of
 * the account's registered `oauth_redirect_uris` (its query is the partner's own), so that our
 * callback never sends a person to a site the account did not name: a test key may also use any
 * http://localhost URL (docs/api.md#connections-and-oauth).
 */
export function checkRedirectUri(raw: string, allowed: { mode: Mode; registered: readonly string[] }): Outcome<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return failure('url_invalid', 'redirect_uri must be an absolute URL, such as https://partner.example/connected', 'redirect_uri');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname))) {
    return failure('url_not_https', 'redirect_uri must use https (http only for localhost)', 'redirect_uri');
  }
  if (url.hash) return failure('url_invalid', 'redirect_uri must not have a fragment', 'redirect_uri');
  if (url.username || url.password) return failure('url_invalid', 'redirect_uri must not carry credentials', 'redirect_uri');
  const localDevelopment = allowed.mode === 'test' && url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname);
  if (!localDevelopment && !allowed.registered.some((registered) => sameOriginAndPath(registered, url))) {
    return failure(
      'redirect_uri_not_registered',
      "redirect_uri must have the origin and path of one of the account's oauth_redirect_uris (an operator registers them: PATCH /admin/v1/accounts/:id)",
      'redirect_uri',
    );
  }
  return success(url.toString());
}

function sameOriginAndPath(registered: string, url: URL): boolean {
  try {
    const target = new URL(registered);
    return target.origin === url.origin && target.pathname === url.pathname;
  } catch {
    return false;
  }
}

/** The partner's `redirect_uri` with our parameters added to its query (its own are kept). */
export function withQuery(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}
