import { failure, Outcome, success } from '@campaign-ops/api-errors';

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The partner's `redirect_uri`, where the person's browser goes back after the consent: https,
 * or http on the person's own machine (localhost, for partners' development). No fragment (the
 * query is what we add to) and no credentials in it.
 */
export function checkRedirectUri(raw: string): Outcome<string> {
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
  return success(url.toString());
}

/** The partner's `redirect_uri` with our parameters added to its query (its own are kept). */
export function withQuery(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}
