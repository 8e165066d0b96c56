import { createHmac, randomBytes } from 'node:crypto';
import { CampaignSpec, Objective } from '@campaign-ops/channels';
import { AccountAccess, AdNetwork, LiveCampaignRequest, NetworkSettings, ProviderAccount, ProviderError, TokenSet } from '../ad-network.port';
import { isIanaTimeZone, isoWithOffset } from '../account-time';
import { toMicros } from '../budget-units';
import { HttpMethod, NetworkAnswer, NetworkHttp } from '../network-http';
import { clientRefused } from '../oauth2';
import { lifetimeEnd, objectiveOf } from '../unified-campaign';

/**
 * X Ads API v12: every fact of the network lives in this file.
 *
 * OAuth 1.0a, not OAuth 2. How a connection carries it (this service's convention):
 * - The app's `CHANNEL_X_ADS_CLIENT_ID` / `_CLIENT_SECRET` are the OAuth 1.0a consumer key and
 *   consumer secret. Every call is signed with them, so X needs them even for imported tokens.
 * - A connection's `access_token` is the user's token and token secret joined by a colon:
 *   `<oauth_token>:<oauth_token_secret>` (X's tokens and secrets never contain a colon; a user
 *   token looks like `6253282-eWudHldS...`). `refresh_token` is unused: X user tokens do not expire
 *   (they end when the person revokes the app), so `expires_at` is null and `refresh` is refused as
 *   `auth`: the only way back is a new consent.
 * - Consent is three-legged and starts with a signed call, so it cannot be a plain URL:
 *   `startConsent` POSTs `oauth/request_token` (with `oauth_callback` = our callback plus the
 *   `state`) and answers `oauth/authorize?oauth_token=<request token>`; `authorizationUrl` refuses
 *   (`oauth1_consent_is_async`). X sends the browser back with `state`, `oauth_token` and
 *   `oauth_verifier` (or `denied` when the person refuses); `callbackCode` (`xAdsCallbackCode`) turns those into the
 *   `code` that `exchangeCode` takes, which POSTs `oauth/access_token?oauth_token&oauth_verifier`
 *   (X documents it as needing no signature) and answers `oauth_token`, `oauth_token_secret`.
 *   The request-token endpoint is the token URL's sibling (`.../oauth/request_token`).
 * - Signing: RFC 5849 HMAC-SHA1 over the method, the base URL and every query and form parameter
 *   with the `oauth_*` ones; the key is `consumer secret & token secret`. Parameters of X Ads
 *   writes travel in the query string (as X's SDKs send them), so everything sent is signed.
 *
 * The API:
 * - Ad account read: `GET /12/accounts/{id}`: `data.timezone` (IANA). The currency is that of its
 *   funding instruments: `GET /12/accounts/{id}/funding_instruments`, `data[].currency` (the first
 *   ACTIVE one; an account with none cannot run a campaign and is unreachable for us).
 * - Campaign create, one "try" of up to four calls: the funding instruments (the campaign needs an
 *   ACTIVE `funding_instrument_id` in the budget's currency), `POST /12/accounts/{id}/campaigns`
 *   (`name`, `funding_instrument_id`, `entity_status=PAUSED`, `budget_optimization=CAMPAIGN`,
 *   `daily_budget_amount_local_micro`, which CAMPAIGN budget optimization requires: a lifetime
 *   budget is `total_budget_amount_local_micro` with the daily cap at the same amount), then
 *   `POST /12/accounts/{id}/line_items`: since v11 the objective and the schedule live on line
 *   items (`objective`, `product_type=PROMOTED_TWEETS`, `placements=ALL_ON_TWITTER`,
 *   `bid_strategy=AUTO`, `entity_status=PAUSED`, `start_time` / `end_time` ISO 8601 written in
 *   the account's time zone). If the line item is refused, the campaign is deleted again (best
 *   effort) so a retry does not leave a second one. The provider resource id is the campaign id.
 * - Objectives (line item): WEBSITE_CONVERSIONS, WEBSITE_CLICKS (traffic), REACH (awareness),
 *   ENGAGEMENTS, LEAD_GENERATION (unconfirmed that v12 still takes it), APP_INSTALLS (X refuses it
 *   without app store identifiers, which a unified campaign does not carry: X's refusal is passed on).
 * - Errors: `{errors: [{code, message, parameter?}], request: {...}}`. Re-authenticate: HTTP 401
 *   (or the classic codes 32 / 89). Slow down: HTTP 429 or error code 88, until
 *   `x-account-rate-limit-reset` / `x-rate-limit-reset` (epoch seconds), or after `Retry-After`.
 *   5xx transient. 404, or 403 ACCOUNT_NOT_FOUND / ACCOUNT_LOCKED_OUT / CURRENT_USER_SUSPENDED:
 *   unreachable. Other 4xx: validation with X's message and code.
 */
const API_VERSION = '12';
const SCOPES: readonly string[] = []; // OAuth 1.0a has no scopes: the app's access level decides.

export const X_OBJECTIVES: Readonly<Record<Objective, string>> = {
  conversion: 'WEBSITE_CONVERSIONS',
  traffic: 'WEBSITE_CLICKS',
  awareness: 'REACH',
  engagement: 'ENGAGEMENTS',
  leads: 'LEAD_GENERATION',
  app_installs: 'APP_INSTALLS',
};

const UNREACHABLE_CODES = new Set(['ACCOUNT_NOT_FOUND', 'ACCOUNT_LOCKED_OUT', 'CURRENT_USER_SUSPENDED', 'NOT_FOUND']);
const AUTH_CODES = new Set(['32', '89', 'UNAUTHORIZED_ACCESS', 'INVALID_OR_EXPIRED_TOKEN']);

/** The `code` of `exchangeCode`, from the query X sends the browser back with; null when the person refused. */
export function xAdsCallbackCode(query: { oauth_token?: string; oauth_verifier?: string; denied?: string }): string | null {
  if (query.denied !== undefined || !query.oauth_token || !query.oauth_verifier) return null;
  return `${query.oauth_token}:${query.oauth_verifier}`;
}

/** A connection's `access_token` from X's user token and token secret. */
export function xAdsAccessToken(token: string, tokenSecret: string): string {
  return `${token}:${tokenSecret}`;
}

interface Credentials {
  consumerKey: string;
  consumerSecret: string;
  token?: string;
  tokenSecret?: string;
}

interface XError {
  errors?: Array<{ code?: unknown; message?: unknown; parameter?: unknown }>;
}

export class XAds implements AdNetwork {
  readonly channel = 'x_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  launchUnavailableReason(): string | null {
    return this.settings.clientId && this.settings.clientSecret
      ? null
      : 'X Ads signs every call with the app (OAuth 1.0a): CHANNEL_X_ADS_CLIENT_ID and CHANNEL_X_ADS_CLIENT_SECRET are needed';
  }

  authorizationUrl(): string {
    throw new ProviderError('validation', 'x_ads consent starts with a signed request-token call: use startConsent()', 'oauth1_consent_is_async');
  }

  /** Step 1 and 2 of the three-legged flow: the consent URL for this state. */
  async startConsent(request: { state: string; redirectUri: string; providerAccountId: string }): Promise<string> {
    const callback = new URL(request.redirectUri);
    callback.searchParams.set('state', request.state);
    const url = this.settings.tokenUrl.replace(/access_token$/, 'request_token');
    const answer = await this.signedCall('POST', url, {}, this.consumer(), { oauth_callback: callback.toString() });
    const form = new URLSearchParams(answer.text);
    const requestToken = form.get('oauth_token');
    // Only the app signs this call: X not authenticating it (401) is the operator's consumer key or secret.
    if (answer.status === 401) throw clientRefused(this.channel, `request token: ${this.refusal(answer, 'request token').providerCode}`, 401);
    if (answer.status !== 200 || !requestToken || form.get('oauth_callback_confirmed') !== 'true') throw this.refusal(answer, 'request token');
    const consent = new URL(this.settings.oauthUrl);
    consent.searchParams.set('oauth_token', requestToken);
    return consent.toString();
  }

  /** The `code` of the callback's query (`oauth_token`, `oauth_verifier`); null when the person refused (`denied`). */
  callbackCode(query: { oauth_token?: string; oauth_verifier?: string; denied?: string }): string | null {
    return xAdsCallbackCode(query);
  }

  /** Step 3: the request token and verifier (`xAdsCallbackCode`) for the user's token and secret. */
  async exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    const [requestToken, verifier, extra] = request.code.split(':');
    if (!requestToken || !verifier || extra !== undefined) throw new ProviderError('auth', 'x_ads: the callback carried no request token and verifier', 'oauth_verifier_missing');
    const answer = await this.http.call({ method: 'POST', url: this.settings.tokenUrl, query: { oauth_token: requestToken, oauth_verifier: verifier } });
    const form = new URLSearchParams(answer.text);
    const token = form.get('oauth_token');
    const secret = form.get('oauth_token_secret');
    if (answer.status === 200 && token && secret) return { accessToken: xAdsAccessToken(token, secret), refreshToken: null, expiresAt: null };
    if (answer.status === 429 || answer.status >= 500) throw this.refusal(answer, 'access token');
    throw new ProviderError('auth', `x_ads refused the request token and verifier (HTTP ${answer.status})`, `http_${answer.status}`, answer.status);
  }

  refresh(): Promise<TokenSet> {
    return Promise.reject(new ProviderError('auth', 'x_ads user tokens do not expire and cannot be refreshed: the person must consent again', 'refresh_unsupported'));
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const credentials = this.user(access.accessToken);
    const account = await this.api(credentials, 'GET', this.accountPath(access.providerAccountId), {}, 'ad account read');
    const timezone = (account as { data?: { timezone?: unknown } }).data?.timezone;
    if (typeof timezone !== 'string' || !isIanaTimeZone(timezone)) throw new ProviderError('transient', 'x_ads answered the account read without a time zone', null);
    const instrument = (await this.fundingInstruments(credentials, access.providerAccountId))[0];
    if (!instrument) throw new ProviderError('account_unreachable', 'x_ads: the ad account has no active funding instrument, so no campaign can run on it', 'FUNDING_INSTRUMENT_NOT_FOUND');
    return { currency: instrument.currency, timezone };
  }

  async createCampaign(access: AccountAccess & { account: ProviderAccount }, request: LiveCampaignRequest): Promise<{ providerResourceId: string }> {
    const spec = request.campaign;
    const objective = X_OBJECTIVES[objectiveOf(spec)];
    const end = lifetimeEnd(this.channel, spec);
    const credentials = this.user(access.accessToken);
    const instrument = (await this.fundingInstruments(credentials, access.providerAccountId)).find((fi) => fi.currency === spec.budget.currency);
    if (!instrument) throw new ProviderError('validation', `x_ads: the ad account has no active funding instrument in ${spec.budget.currency}`, 'FUNDING_INSTRUMENT_NOT_FOUND');

    const campaignPath = `${this.accountPath(access.providerAccountId)}/campaigns`;
    const created = await this.api(credentials, 'POST', campaignPath, this.campaignParams(spec, instrument.id), 'campaign create');
    const campaignId = (created as { data?: { id?: unknown } }).data?.id;
    if (typeof campaignId !== 'string' || !campaignId) throw new ProviderError('transient', 'x_ads answered the campaign create without a campaign id', null);

    const lineItem = {
      campaign_id: campaignId,
      name: spec.name,
      objective,
      product_type: 'PROMOTED_TWEETS',
      placements: 'ALL_ON_TWITTER',
      bid_strategy: 'AUTO',
      entity_status: 'PAUSED',
      start_time: isoWithOffset(spec.schedule.start_at, access.account.timezone),
      ...(end ? { end_time: isoWithOffset(end, access.account.timezone) } : {}),
    };
    try {
      await this.api(credentials, 'POST', `${this.accountPath(access.providerAccountId)}/line_items`, lineItem, 'line item create');
    } catch (error) {
      await this.api(credentials, 'DELETE', `${campaignPath}/${encodeURIComponent(campaignId)}`, {}, 'campaign delete').catch(() => undefined);
      throw error;
    }
    return { providerResourceId: campaignId };
  }

  /** The campaign's parameters (query string of the POST). */
  campaignParams(spec: CampaignSpec, fundingInstrumentId: string): Record<string, string> {
    const micros = String(toMicros(spec.budget.amount_micros));
    return {
      name: spec.name,
      funding_instrument_id: fundingInstrumentId,
      entity_status: 'PAUSED',
      budget_optimization: 'CAMPAIGN',
      daily_budget_amount_local_micro: micros,
      ...(spec.budget.type === 'lifetime' ? { total_budget_amount_local_micro: micros } : {}),
    };
  }

  private async fundingInstruments(credentials: Credentials, accountId: string): Promise<Array<{ id: string; currency: string }>> {
    const answer = await this.api(credentials, 'GET', `${this.accountPath(accountId)}/funding_instruments`, {}, 'funding instruments read');
    const data = (answer as { data?: unknown }).data;
    return (Array.isArray(data) ? data : [])
      .filter((fi: { entity_status?: unknown; deleted?: unknown }) => fi.entity_status === 'ACTIVE' && fi.deleted !== true)
      .filter((fi: { id?: unknown; currency?: unknown }) => typeof fi.id === 'string' && typeof fi.currency === 'string')
      .map((fi: { id: string; currency: string }) => ({ id: fi.id, currency: fi.currency }));
  }

  private async api(credentials: Credentials, method: HttpMethod, path: string, params: Record<string, string>, what: string): Promise<unknown> {
    const answer = await this.signedCall(method, `${this.settings.apiUrl}/${API_VERSION}${path}`, params, credentials);
    if (answer.status >= 200 && answer.status < 300) return answer.json ?? {};
    throw this.refusal(answer, what);
  }

  private signedCall(method: HttpMethod, url: string, query: Record<string, string>, credentials: Credentials, oauthExtra: Record<string, string> = {}): Promise<NetworkAnswer> {
    const authorization = oauth1Header({ method, url, params: query, ...credentials, oauthExtra });
    return this.http.call({ method, url, query, headers: { authorization } });
  }

  private accountPath(accountId: string): string {
    return `/accounts/${encodeURIComponent(accountId)}`;
  }

  private consumer(): Credentials {
    const reason = this.launchUnavailableReason();
    if (reason) throw new ProviderError('validation', reason, 'channel_not_configured');
    return { consumerKey: this.settings.clientId!, consumerSecret: this.settings.clientSecret! };
  }

  /** The consumer and the user's token and secret from a connection's `access_token`. */
  private user(accessToken: string): Credentials {
    const parts = accessToken.split(':');
    if (parts.length !== 2 || !parts[0] || !parts[1])
      throw new ProviderError('auth', 'x_ads: the access token must be "<oauth_token>:<oauth_token_secret>"', 'access_token_malformed');
    return { ...this.consumer(), token: parts[0], tokenSecret: parts[1] };
  }

  /** An answer that is not a success, classified by X's rules. */
  private refusal(answer: NetworkAnswer, what: string): ProviderError {
    const first = ((answer.json ?? {}) as XError).errors?.[0];
    const code = first?.code === undefined || first.code === null ? null : String(first.code);
    const message = typeof first?.message === 'string' ? first.message : `x_ads refused the ${what} (HTTP ${answer.status})`;
    if (answer.status === 429 || code === '88') return new ProviderError('rate_limited', `x_ads asks to slow down: ${message}`, code ?? 'rate_limited', answer.status, answer.retryAfterMs ?? rateLimitReset(answer));
    if (answer.status === 401 || (code !== null && AUTH_CODES.has(code) && answer.status < 500)) return new ProviderError('auth', `x_ads refused the token: ${message}`, code ?? 'unauthorized', answer.status);
    if (answer.status >= 500) return new ProviderError('transient', `x_ads failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
    if (answer.status === 404 || (answer.status === 403 && code !== null && UNREACHABLE_CODES.has(code)))
      return new ProviderError('account_unreachable', `x_ads: the token cannot reach this ad account: ${message}`, code ?? `http_${answer.status}`, answer.status);
    const parameter = typeof first?.parameter === 'string' ? ` (${first.parameter})` : '';
    return new ProviderError('validation', `${message}${parameter}`, code ?? `http_${answer.status}`, answer.status);
  }
}

/** X's rate-limit reset (epoch seconds) as a wait from now. */
function rateLimitReset(answer: NetworkAnswer, now: number = Date.now()): number | null {
  const reset = Number(answer.headers['x-account-rate-limit-reset'] ?? answer.headers['x-rate-limit-reset']);
  return Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - now) : null;
}

// ---- OAuth 1.0a (RFC 5849) ----

/** RFC 3986 percent-encoding, as RFC 5849 §3.6 wants it (only unreserved characters stay). */
export function oauthEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export interface OAuth1Request {
  method: string;
  /** May carry a query string: its parameters are signed with `params`. */
  url: string;
  /** Query parameters added to the URL, and form-body parameters (both are signed). */
  params: Record<string, string>;
  consumerKey: string;
  consumerSecret: string;
  token?: string;
  tokenSecret?: string;
  /** `oauth_callback`, `oauth_verifier`. */
  oauthExtra?: Record<string, string>;
  /** Fixed in tests; fresh for every call otherwise. */
  nonce?: string;
  timestamp?: number;
}

/** The HMAC-SHA1 signature of a request (RFC 5849 §3.4). */
export function oauth1Signature(request: OAuth1Request, oauthParams: Record<string, string>): string {
  const url = new URL(request.url);
  const pairs: Array<[string, string]> = [...url.searchParams, ...Object.entries(request.params), ...Object.entries(oauthParams)].map(([k, v]) => [oauthEncode(k), oauthEncode(v)]);
  pairs.sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  const baseUrl = `${url.protocol}//${url.host.toLowerCase()}${url.pathname}`;
  const base = [request.method.toUpperCase(), oauthEncode(baseUrl), oauthEncode(pairs.map(([k, v]) => `${k}=${v}`).join('&'))].join('&');
  const key = `${oauthEncode(request.consumerSecret)}&${oauthEncode(request.tokenSecret ?? '')}`;
  return createHmac('sha1', key).update(base).digest('base64');
}

/** The `Authorization: OAuth ...` header of a request. */
export function oauth1Header(request: OAuth1Request): string {
  const oauthParams: Record<string, string> = {
    oauth_consumer_key: request.consumerKey,
    oauth_nonce: request.nonce ?? randomBytes(24).toString('hex'),
    oauth_signature_method: 'HMAC-SHA1',
    oauth_timestamp: String(request.timestamp ?? Math.floor(Date.now() / 1000)),
    ...(request.token ? { oauth_token: request.token } : {}),
    oauth_version: '1.0',
    ...(request.oauthExtra ?? {}),
  };
  const signed = { ...oauthParams, oauth_signature: oauth1Signature(request, oauthParams) };
  return `OAuth ${Object.entries(signed)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${oauthEncode(k)}="${oauthEncode(v)}"`)
    .join(', ')}`;
}
