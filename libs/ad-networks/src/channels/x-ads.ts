import { createHmac, randomBytes } from 'node:crypto';
import { Objective } from '@campaign-ops/channels';
import {
  AccountAccess,
  AdNetwork,
  CampaignCheck,
  CreatedCampaign,
  FoundCampaign,
  LiveAccess,
  LiveCampaignRequest,
  NetworkSettings,
  ProviderAccount,
  ProviderError,
  TokenSet,
} from '../ad-network.port';
import { isIanaTimeZone, isoWithOffset } from '../account-time';
import { toMicros } from '../budget-units';
import { carriesMarker, markedName, oldestFirst } from '../campaign-marker';
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
 *   the account's time zone). The provider resource id is the campaign id. If the line item is
 *   refused (anything but a transient failure), the campaign is deleted again (best effort), so
 *   that the next try, which looks nothing up, does not leave a second one. After a transient
 *   failure the line item may exist: the campaign stays, and the lookup that precedes the next try
 *   finds it (and completes it, below).
 * - The dispatch's marker: X campaigns have no field for the caller's own reference, so the
 *   campaign's name carries it (`markedName`), shortened to 255 characters (the longest name X's
 *   `q` filter takes; unconfirmed as the campaign name's own maximum). The line item keeps the
 *   partner's name.
 * - Finding a campaign again: `GET /12/accounts/{id}/campaigns?count=1000&sort_by=created_at-desc`,
 *   following `next_cursor` for at most 10 pages. X's `q` filter is a prefix match on the name,
 *   which cannot find a suffix, so every campaign is read, newest first; deleted campaigns are
 *   not listed (no `with_deleted`: the campaigns a refused line item made us delete are not found).
 *   Kept: the names that carry the marker, oldest first by `created_at`, then by id (base 36).
 * - A found campaign without its line item (a try that ended between the two creates: a lost
 *   answer, a crash) is completed, not merely accepted: the lookup asks
 *   `GET .../line_items?campaign_ids=<oldest>` and, when there is none, creates the line item the
 *   create would have made (a refusal is handled as in a create: the campaign deleted, the
 *   refusal thrown). A campaign without a line item has no objective and no schedule, which is not
 *   what the partner asked for; the oldest is the one the dispatch adopts, so only it is completed.
 * - Dry run: X has no validate-only call, so `validateCampaign` builds the campaign and line item
 *   a create would send (every rule above; the funding instrument, which only a call gives, left
 *   out) and calls nothing: `checkedBy: 'rules'`.
 * - Objectives (line item): WEBSITE_CONVERSIONS, WEBSITE_CLICKS (traffic), REACH (awareness),
 *   ENGAGEMENTS, LEAD_GENERATION (unconfirmed that v12 still takes it), APP_INSTALLS (X refuses it
 *   without app store identifiers, which a unified campaign does not carry: X's refusal is passed on).
 * - Errors: `{errors: [{code, message, parameter?}], request: {...}}`. Re-authenticate: HTTP 401
 *   (or the classic codes 32 / 89). Slow down: HTTP 429 or error code 88, until
 *   `x-account-rate-limit-reset` / `x-rate-limit-reset` (epoch seconds), or after `Retry-After`.
 *   5xx transient. 404, or 403 ACCOUNT_NOT_FOUND / ACCOUNT_LOCKED_OUT / CURRENT_USER_SUSPENDED:
 *   unreachable. Other 4xx: validation with X's message and code.
 * - Revocation (DELETE /v1/connections/:id): `POST https://api.x.com/1.1/oauth/invalidate_token`,
 *   signed like any call with the user's token and secret, no parameters (X's "POST
 *   oauth/invalidate_token": "user context with the access tokens that you would like to
 *   invalidate"); 200 `{"access_token": ...}`, and 401 code 89 once the token is invalidated. The
 *   Ads API's user tokens are these same OAuth 1.0a tokens. The path sits beside the token URL's.
 *   X keeps one token per person and app: every connection holding it loses it, as with Meta.
 */
const API_VERSION = '12';
const SCOPES: readonly string[] = []; // OAuth 1.0a has no scopes: the app's access level decides.
/** X's `q` takes names of 1 to 255 characters (unconfirmed as the campaign name's own maximum). */
const NAME_MAX_LENGTH = 255;
/** `count` of a list: at most 1000. */
const LOOKUP_PAGE_SIZE = '1000';
/** Bounds the lookup: 10 pages of 1000, newest first, reach far past any campaign a retry looks for. */
const LOOKUP_MAX_PAGES = 10;

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

/** What one try sends: the campaign (once the funding instrument is known) and its line item (once the campaign id is). */
interface TryPlan {
  campaign(fundingInstrumentId: string): Record<string, string>;
  lineItem(campaignId: string): Record<string, string>;
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

  /**
   * The `code` of the callback's query (`oauth_token`, `oauth_verifier`); null when the person
   * refused (`denied`). The request token must be the one this round's consent was started with
   * (`binding`): a request token of another round (someone else's consent) is refused.
   */
  callbackCode(query: { oauth_token?: string; oauth_verifier?: string; denied?: string }, binding?: string | null): string | null {
    const code = xAdsCallbackCode(query);
    if (code !== null && binding !== undefined && binding !== null && query.oauth_token !== binding)
      throw new ProviderError('auth', 'x_ads: the callback carried the request token of another round', 'request_token_mismatch');
    return code;
  }

  /** The request token the consent URL carries: the callback must come back with it. */
  consentBinding(authorizationUrl: string): string | null {
    return new URL(authorizationUrl).searchParams.get('oauth_token');
  }

  /** Step 3: the request token and verifier (`xAdsCallbackCode`) for the user's token and secret. */
  async exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    const [requestToken, verifier, extra] = request.code.split(':');
    if (!requestToken || !verifier || extra !== undefined)
      throw new ProviderError('auth', 'x_ads: the callback carried no request token and verifier', 'oauth_verifier_missing');
    const answer = await this.http.call({ method: 'POST', url: this.settings.tokenUrl, query: { oauth_token: requestToken, oauth_verifier: verifier } });
    const form = new URLSearchParams(answer.text);
    const token = form.get('oauth_token');
    const secret = form.get('oauth_token_secret');
    if (answer.status === 200 && token && secret) return { accessToken: xAdsAccessToken(token, secret), refreshToken: null, expiresAt: null };
    if (answer.status === 429 || answer.status >= 500) throw this.refusal(answer, 'access token');
    throw new ProviderError('auth', `x_ads refused the request token and verifier (HTTP ${answer.status})`, `http_${answer.status}`, answer.status);
  }

  /** Invalidates the user's token at X (`POST /1.1/oauth/invalidate_token`, signed with it): the person's authorization of the app ends. */
  async revokeTokens(tokens: { accessToken: string; refreshToken: string | null }): Promise<void> {
    const answer = await this.signedCall('POST', new URL('/1.1/oauth/invalidate_token', this.settings.tokenUrl).href, {}, this.user(tokens.accessToken));
    if (answer.status < 200 || answer.status >= 300) throw this.refusal(answer, 'token invalidation');
  }

  refresh(): Promise<TokenSet> {
    return Promise.reject(
      new ProviderError('auth', 'x_ads user tokens do not expire and cannot be refreshed: the person must consent again', 'refresh_unsupported'),
    );
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const credentials = this.user(access.accessToken);
    const account = await this.api(credentials, 'GET', this.accountPath(access.providerAccountId), {}, 'ad account read');
    const timezone = (account as { data?: { timezone?: unknown } }).data?.timezone;
    if (typeof timezone !== 'string' || !isIanaTimeZone(timezone))
      throw new ProviderError('transient', 'x_ads answered the account read without a time zone', null);
    const instrument = (await this.fundingInstruments(credentials, access.providerAccountId))[0];
    if (!instrument)
      throw new ProviderError(
        'account_unreachable',
        'x_ads: the ad account has no active funding instrument, so no campaign can run on it',
        'FUNDING_INSTRUMENT_NOT_FOUND',
      );
    return { currency: instrument.currency, timezone };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const plan = this.tryPlan(access, request); // every rule, before any call
    const credentials = this.user(access.accessToken);
    const currency = request.campaign.budget.currency;
    const instrument = (await this.fundingInstruments(credentials, access.providerAccountId)).find((fi) => fi.currency === currency);
    if (!instrument)
      throw new ProviderError('validation', `x_ads: the ad account has no active funding instrument in ${currency}`, 'FUNDING_INSTRUMENT_NOT_FOUND');

    const created = await this.api(credentials, 'POST', this.campaignsPath(access.providerAccountId), plan.campaign(instrument.id), 'campaign create');
    const campaignId = (created as { data?: { id?: unknown } }).data?.id;
    if (typeof campaignId !== 'string' || !campaignId) throw new ProviderError('transient', 'x_ads answered the campaign create without a campaign id', null);
    await this.createLineItem(credentials, access.providerAccountId, campaignId, plan);
    return { providerResourceId: campaignId };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const credentials = this.user(access.accessToken);
    const found: FoundCampaign[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < LOOKUP_MAX_PAGES; page++) {
      const params: Record<string, string> = { count: LOOKUP_PAGE_SIZE, sort_by: 'created_at-desc', ...(cursor ? { cursor } : {}) };
      const answer = (await this.api(credentials, 'GET', this.campaignsPath(access.providerAccountId), params, 'campaign lookup')) as {
        data?: unknown;
        next_cursor?: unknown;
      };
      if (!Array.isArray(answer.data)) throw new ProviderError('transient', 'x_ads answered the campaign lookup without data', null);
      for (const campaign of answer.data as Array<{ id?: unknown; name?: unknown; created_at?: unknown; deleted?: unknown }>)
        if (typeof campaign?.id === 'string' && campaign.deleted !== true && carriesMarker(campaign.name, request.dispatchId))
          found.push({ providerResourceId: campaign.id, createdAt: typeof campaign.created_at === 'string' ? campaign.created_at : null });
      cursor = typeof answer.next_cursor === 'string' && answer.next_cursor ? answer.next_cursor : undefined;
      if (!cursor) break;
    }
    const sorted = oldestFirst(found);
    if (sorted.length > 0) await this.completeIfNeeded(credentials, access, request, sorted[0].providerResourceId);
    return sorted;
  }

  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    this.tryPlan(access, request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /**
   * The campaign (query string of its POST), named with the dispatch's marker, and its line item:
   * what a create sends, and all a dry run checks (every rule is applied here, before any call).
   */
  private tryPlan(access: LiveAccess, request: LiveCampaignRequest): TryPlan {
    const spec = request.campaign;
    const objective = X_OBJECTIVES[objectiveOf(spec)];
    const end = lifetimeEnd(this.channel, spec);
    const micros = String(toMicros(spec.budget.amount_micros));
    const name = markedName(spec.name, request.dispatchId, NAME_MAX_LENGTH);
    const startTime = isoWithOffset(spec.schedule.start_at, access.account.timezone);
    const endTime = end ? isoWithOffset(end, access.account.timezone) : undefined;
    return {
      campaign: (fundingInstrumentId) => ({
        name,
        funding_instrument_id: fundingInstrumentId,
        entity_status: 'PAUSED',
        budget_optimization: 'CAMPAIGN',
        daily_budget_amount_local_micro: micros,
        ...(spec.budget.type === 'lifetime' ? { total_budget_amount_local_micro: micros } : {}),
      }),
      lineItem: (campaignId) => ({
        campaign_id: campaignId,
        name: spec.name,
        objective,
        product_type: 'PROMOTED_TWEETS',
        placements: 'ALL_ON_TWITTER',
        bid_strategy: 'AUTO',
        entity_status: 'PAUSED',
        start_time: startTime,
        ...(endTime ? { end_time: endTime } : {}),
      }),
    };
  }

  /** The line item of a campaign; refused for good (not a transient failure, after which it may exist), the campaign is deleted again, best effort. */
  private async createLineItem(credentials: Credentials, accountId: string, campaignId: string, plan: TryPlan): Promise<void> {
    try {
      await this.api(credentials, 'POST', `${this.accountPath(accountId)}/line_items`, plan.lineItem(campaignId), 'line item create');
    } catch (error) {
      if (!(error instanceof ProviderError) || error.kind !== 'transient')
        await this.api(credentials, 'DELETE', `${this.campaignsPath(accountId)}/${encodeURIComponent(campaignId)}`, {}, 'campaign delete').catch(
          () => undefined,
        );
      throw error;
    }
  }

  /** A found campaign that an earlier try left without its line item gets the one that try would have made. */
  private async completeIfNeeded(credentials: Credentials, access: LiveAccess, request: LiveCampaignRequest, campaignId: string): Promise<void> {
    const answer = (await this.api(
      credentials,
      'GET',
      `${this.accountPath(access.providerAccountId)}/line_items`,
      { campaign_ids: campaignId },
      'line item lookup',
    )) as { data?: unknown };
    if (!Array.isArray(answer.data)) throw new ProviderError('transient', 'x_ads answered the line item lookup without data', null);
    if (answer.data.some((item: { campaign_id?: unknown; deleted?: unknown }) => item?.campaign_id === campaignId && item.deleted !== true)) return;
    await this.createLineItem(credentials, access.providerAccountId, campaignId, this.tryPlan(access, request));
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

  private signedCall(
    method: HttpMethod,
    url: string,
    query: Record<string, string>,
    credentials: Credentials,
    oauthExtra: Record<string, string> = {},
  ): Promise<NetworkAnswer> {
    const authorization = oauth1Header({ method, url, params: query, ...credentials, oauthExtra });
    return this.http.call({ method, url, query, headers: { authorization } });
  }

  private accountPath(accountId: string): string {
    return `/accounts/${encodeURIComponent(accountId)}`;
  }

  private campaignsPath(accountId: string): string {
    return `${this.accountPath(accountId)}/campaigns`;
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
    if (answer.status === 429 || code === '88')
      return new ProviderError(
        'rate_limited',
        `x_ads asks to slow down: ${message}`,
        code ?? 'rate_limited',
        answer.status,
        answer.retryAfterMs ?? rateLimitReset(answer),
      );
    if (answer.status === 401 || (code !== null && AUTH_CODES.has(code) && answer.status < 500))
      return new ProviderError('auth', `x_ads refused the token: ${message}`, code ?? 'unauthorized', answer.status);
    if (answer.status >= 500) return new ProviderError('transient', `x_ads failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
    if (answer.status === 404 || (answer.status === 403 && code !== null && UNREACHABLE_CODES.has(code)))
      return new ProviderError(
        'account_unreachable',
        `x_ads: the token cannot reach this ad account: ${message}`,
        code ?? `http_${answer.status}`,
        answer.status,
      );
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
  const pairs: Array<[string, string]> = [...url.searchParams, ...Object.entries(request.params), ...Object.entries(oauthParams)].map(([k, v]) => [
    oauthEncode(k),
    oauthEncode(v),
  ]);
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
