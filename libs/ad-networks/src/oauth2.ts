import { ProviderError } from '@campaign-ops/channels';
import { NetworkSettings, TokenSet } from './ad-network.port';
import { NetworkAnswer, NetworkHttp } from './network-http';

/**
 * The RFC 6749 parts most networks share: the consent URL and the token endpoint (form body,
 * client credentials in the body or as HTTP Basic). A network that strays (Meta's GET exchange,
 * TikTok's JSON envelope) writes its own in its file and may still use `tokenSetFrom`.
 */
export function consentUrl(settings: NetworkSettings, params: Record<string, string | undefined>): string {
  const url = new URL(settings.oauthUrl);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

export function requireClient(settings: NetworkSettings): { clientId: string; clientSecret: string } {
  if (!settings.clientId || !settings.clientSecret)
    throw new ProviderError('validation', `${settings.channel} has no client id and secret configured`, 'channel_not_configured');
  return { clientId: settings.clientId, clientSecret: settings.clientSecret };
}

/** RFC 7636's consent parameters for a challenge (S256), or none without one. */
export const pkceChallenge = (codeChallenge: string | undefined): Record<string, string | undefined> =>
  codeChallenge ? { code_challenge: codeChallenge, code_challenge_method: 'S256' } : {};

export interface TokenRequestOptions {
  /** `basic`: client id and secret as HTTP Basic (LinkedIn accepts both, Pinterest and Reddit want Basic). */
  clientAuth?: 'body' | 'basic';
  /** Extra form fields every grant needs (e.g. Microsoft's `scope`). */
  extra?: Record<string, string>;
  /** RFC 7636: the verifier of the challenge the consent was started with. */
  codeVerifier?: string;
}

/** `grant_type=authorization_code`. */
export function exchangeAuthorizationCode(
  http: NetworkHttp,
  settings: NetworkSettings,
  code: string,
  redirectUri: string,
  options: TokenRequestOptions = {},
): Promise<TokenSet> {
  const grant: Record<string, string> = { grant_type: 'authorization_code', code, redirect_uri: redirectUri };
  if (options.codeVerifier) grant.code_verifier = options.codeVerifier;
  return tokenGrant(http, settings, grant, options);
}

/** `grant_type=refresh_token`. */
export function refreshAccessToken(http: NetworkHttp, settings: NetworkSettings, refreshToken: string, options: TokenRequestOptions = {}): Promise<TokenSet> {
  return tokenGrant(http, settings, { grant_type: 'refresh_token', refresh_token: refreshToken }, options);
}

async function tokenGrant(http: NetworkHttp, settings: NetworkSettings, grant: Record<string, string>, options: TokenRequestOptions): Promise<TokenSet> {
  const client = requireClient(settings);
  const basic = options.clientAuth === 'basic';
  const answer = await http.call({
    method: 'POST',
    url: settings.tokenUrl,
    headers: basic ? { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` } : {},
    form: { ...grant, ...(options.extra ?? {}), ...(basic ? {} : { client_id: client.clientId, client_secret: client.clientSecret }) },
  });
  if (answer.status >= 200 && answer.status < 300) return tokenSetFrom(settings.channel, answer.json);
  throw tokenRefusal(settings.channel, answer);
}

/**
 * RFC 7009 token revocation at `url` (a path beside the token endpoint's): the refresh token, which
 * ends the grant, or the access token when there is none. `clientAuth`: how the network wants this
 * service's client (`none`: Google's endpoint takes the token alone).
 */
export async function revokeToken(
  http: NetworkHttp,
  settings: NetworkSettings,
  path: string,
  tokens: { accessToken: string; refreshToken: string | null },
  clientAuth: 'none' | 'body' | 'basic',
  /** Whether to send RFC 7009's `token_type_hint` (Reddit asks for it; Google and LinkedIn document `token` alone). */
  hint = false,
): Promise<void> {
  const form: Record<string, string> = { token: tokens.refreshToken ?? tokens.accessToken };
  if (hint) form.token_type_hint = tokens.refreshToken ? 'refresh_token' : 'access_token';
  const client = clientAuth === 'none' ? null : requireClient(settings);
  const answer = await http.call({
    method: 'POST',
    url: new URL(path, settings.tokenUrl).href,
    headers: client && clientAuth === 'basic' ? { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` } : {},
    form: { ...form, ...(client && clientAuth === 'body' ? { client_id: client.clientId, client_secret: client.clientSecret } : {}) },
  });
  if (answer.status < 200 || answer.status >= 300) throw tokenRefusal(settings.channel, answer);
}

/**
 * An RFC 6749 §5.2 refusal: 429 is `rate_limited`, 5xx `transient`, any other refusal as `grantRefusal` says.
 */
export function tokenRefusal(channel: string, answer: NetworkAnswer): ProviderError {
  const body = (answer.json ?? {}) as { error?: unknown; error_description?: unknown };
  const code = typeof body.error === 'string' ? body.error : null;
  if (answer.status === 429) return new ProviderError('rate_limited', `${channel} token endpoint asks to slow down`, code, 429, answer.retryAfterMs);
  if (answer.status >= 500)
    return new ProviderError('transient', `${channel} token endpoint failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
  return grantRefusal(channel, answer.status, code, typeof body.error_description === 'string' ? body.error_description : null);
}

/** RFC 6749 §5.2 codes that refuse the client, not the grant. */
const CLIENT_REFUSALS = ['invalid_client', 'unauthorized_client'];

/**
 * A token endpoint's refusal (neither 429 nor 5xx) by whom it refuses. This service's OAuth client
 * (`invalid_client`, `unauthorized_client`, or a 401, which §5.2 keeps for client authentication)
 * is the operator's configuration: `validation` with providerCode `invalid_client`, which no
 * consent by the person fixes and which must not move connections to reauth_required. Anything
 * else (`invalid_grant`, ...) is `auth`: the grant cannot be used, so the person must consent again.
 */
export function grantRefusal(channel: string, status: number, code: string | null, said: string | null, fallbackCode = 'token_refused'): ProviderError {
  const detail = `${code ?? `HTTP ${status}`}${said ? `: ${said}` : ''}`;
  if ((code !== null && CLIENT_REFUSALS.includes(code)) || (status === 401 && code !== 'invalid_grant')) return clientRefused(channel, detail, status);
  return new ProviderError('auth', `${channel} refused the grant (${detail})`, code ?? fallbackCode, status);
}

/** The network refused this service's OAuth client: the operator's CHANNEL_<CHANNEL>_CLIENT_ID / _CLIENT_SECRET. */
export function clientRefused(channel: string, detail: string, status: number | null): ProviderError {
  const variables = `CHANNEL_${channel.toUpperCase()}_CLIENT_ID and _CLIENT_SECRET`;
  return new ProviderError('validation', `${channel} refused this service's OAuth client (${detail}); check ${variables}`, 'invalid_client', status);
}

/** `{access_token, refresh_token?, expires_in?}` as a TokenSet; anything else is a broken answer (transient). */
export function tokenSetFrom(channel: string, json: unknown, now: number = Date.now()): TokenSet {
  const body = (json ?? {}) as { access_token?: unknown; refresh_token?: unknown; expires_in?: unknown };
  if (typeof body.access_token !== 'string' || !body.access_token)
    throw new ProviderError('transient', `${channel} token endpoint answered without an access_token`, null);
  const expiresIn = Number(body.expires_in);
  return {
    accessToken: body.access_token,
    refreshToken: typeof body.refresh_token === 'string' && body.refresh_token ? body.refresh_token : null,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(now + expiresIn * 1000).toISOString() : null,
  };
}
