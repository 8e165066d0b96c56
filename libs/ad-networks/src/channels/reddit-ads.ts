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
import { isIanaTimeZone } from '../account-time';
import { toMicros } from '../budget-units';
import { carriesMarker, markedName, oldestFirst } from '../campaign-marker';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, grantRefusal, requireClient, revokeToken, tokenSetFrom } from '../oauth2';
import { lifetimeEnd, objectiveOf } from '../unified-campaign';

/**
 * Reddit Ads API v3: every fact of the network lives in this file.
 *
 * - OAuth 2 on Reddit's own host: consent at `www.reddit.com/api/v1/authorize`
 *   (`response_type=code`, `duration=permanent`, or no refresh token is issued; scopes
 *   comma-separated: `adsread,adsedit`); code exchange and refresh at
 *   `www.reddit.com/api/v1/access_token`, form body, client as HTTP Basic. Access tokens live
 *   3600 or 86400 s (trust `expires_in`); a refresh answers no new refresh token, so the one on file
 *   stays. A refused grant is `{"error": "invalid_grant"}`, which Reddit may answer with HTTP 200.
 *   Reddit refuses default User-Agent strings: every call names ours.
 * - Every API call: `Authorization: Bearer <token>`; bodies wrapped as `{"data": {...}}`, answers
 *   too. Errors: `{"error": {"code", "message"}}` (unconfirmed; a bare `{"message", "error": <status>}`
 *   is read as well).
 * - Ad account read: `GET /api/v3/ad_accounts/{id}`: `data.currency` and `data.time_zone_id`
 *   (unconfirmed, from CHANNELS.md).
 * - Campaign create: `POST /api/v3/ad_accounts/{id}/campaigns` with `{data: {...}}` (unconfirmed
 *   path shape, from CHANNELS.md): `name`, `objective`, `configured_status` (required; it defaults
 *   to ACTIVE, so we send PAUSED). A budget on the campaign is campaign budget optimization:
 *   `is_campaign_budget_optimization: true` with `goal_type` DAILY_SPEND / LIFETIME_SPEND and
 *   `goal_value` in micro-currency, `bid_strategy`, `bid_type` and `start_time` (unconfirmed that
 *   Reddit takes CBO for CONVERSIONS and APP_INSTALLS; a third-party reading of Reddit's spec says
 *   it does not, and that CBO campaigns now need a conversion pixel: Reddit's own refusal is
 *   passed on as validation if so). Times ISO 8601 UTC. The id is `data.id`.
 * - Objectives: CONVERSIONS, CLICKS (traffic and engagement), IMPRESSIONS (awareness),
 *   LEAD_GENERATION, APP_INSTALLS.
 * - The dispatch's marker: a campaign has no field for the caller's own reference, so its name
 *   carries it (`markedName`), shortened to 500 characters (unconfirmed: a third-party reading of
 *   Reddit's spec says names take 3 to 500).
 * - Finding a campaign again: `GET /api/v3/ad_accounts/{id}/campaigns?page.size=1000` (no name
 *   filter; 1000 per page, unconfirmed as the maximum), following `pagination.next_url` for at most
 *   10 pages: its `page.token` is sent to our own API URL again, never the token to wherever the
 *   link points. Answers `{data: [...], pagination: {next_url}}` (unconfirmed; so is the order
 *   Reddit lists in, which decides what 10 pages reach in an account of more than 10000
 *   campaigns). Kept: the names that carry the marker, oldest first by `created_at`, then by id.
 * - Dry run: Reddit documents no validate-only call, so `validateCampaign` builds the very body
 *   `createCampaign` would send (every rule above applies) and calls nothing: `checkedBy: 'rules'`.
 * - Re-authenticate: HTTP 401; a refused refresh. Slow down: 429, after `Retry-After`, else the
 *   `reset` of the IETF `RateLimit` header or `X-Ratelimit-Reset` seconds (unconfirmed). 5xx
 *   transient. 403 / 404 on the ad account: unreachable. Other 4xx: validation.
 * - Revocation (DELETE /v1/connections/:id): `POST /api/v1/revoke_token`, HTTP Basic client,
 *   `token` and `token_type_hint` (Reddit's OAuth2 wiki); the refresh token's access tokens go too.
 */
const API_VERSION = 'v3';
const SCOPES = ['adsread', 'adsedit'] as const;
const USER_AGENT = 'campaign-ops/0.1 (live ad-network adapter)';
/** Unconfirmed (see the header). */
const NAME_MAX_LENGTH = 500;
/** `page.size` of the campaign list (unconfirmed as Reddit's maximum). */
const LOOKUP_PAGE_SIZE = 1_000;
/** Bounds the lookup: 10 pages of 1000 reach far past any campaign a retry looks for. */
const LOOKUP_MAX_PAGES = 10;

export const REDDIT_OBJECTIVES: Readonly<Record<Objective, { objective: string; bidType: string }>> = {
  conversion: { objective: 'CONVERSIONS', bidType: 'CPC' },
  traffic: { objective: 'CLICKS', bidType: 'CPC' },
  awareness: { objective: 'IMPRESSIONS', bidType: 'CPM' },
  engagement: { objective: 'CLICKS', bidType: 'CPC' },
  leads: { objective: 'LEAD_GENERATION', bidType: 'CPC' },
  app_installs: { objective: 'APP_INSTALLS', bidType: 'CPC' },
};

interface RedditError {
  error?: unknown;
  message?: unknown;
  error_description?: unknown;
}

export class RedditAds implements AdNetwork {
  readonly channel = 'reddit_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string }): string {
    const { clientId } = requireClient(this.settings);
    return consentUrl(this.settings, {
      client_id: clientId,
      response_type: 'code',
      state: request.state,
      redirect_uri: request.redirectUri,
      duration: 'permanent',
      scope: SCOPES.join(','),
    });
  }

  exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    return this.grant({ grant_type: 'authorization_code', code: request.code, redirect_uri: request.redirectUri });
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return this.grant({ grant_type: 'refresh_token', refresh_token: refreshToken });
  }

  /** `POST https://www.reddit.com/api/v1/revoke_token` (HTTP Basic client, `token` and `token_type_hint`): revoking the refresh token revokes its access tokens. */
  revokeTokens(tokens: { accessToken: string; refreshToken: string | null }): Promise<void> {
    return revokeToken(this.http, this.settings, 'revoke_token', tokens, 'basic', true);
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const answer = await this.http.call({ method: 'GET', url: this.accountUrl(access.providerAccountId), headers: this.headers(access) });
    if (answer.status !== 200) throw this.refusal(answer, 'ad account read');
    const data = ((answer.json ?? {}) as { data?: { currency?: unknown; time_zone_id?: unknown } }).data;
    if (typeof data?.currency !== 'string' || !/^[A-Z]{3}$/.test(data.currency) || typeof data.time_zone_id !== 'string' || !isIanaTimeZone(data.time_zone_id))
      throw new ProviderError('transient', 'reddit_ads answered the ad account read without a currency and time zone', null, answer.status);
    return { currency: data.currency, timezone: data.time_zone_id };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const data = this.campaignBody(request);
    const answer = await this.http.call({
      method: 'POST',
      url: `${this.accountUrl(access.providerAccountId)}/campaigns`,
      headers: this.headers(access),
      json: { data },
    });
    if (answer.status !== 200 && answer.status !== 201) throw this.refusal(answer, 'campaign create');
    const id = ((answer.json ?? {}) as { data?: { id?: unknown } }).data?.id;
    if (typeof id !== 'string' || !id)
      throw new ProviderError('transient', 'reddit_ads answered the campaign create without a campaign id', null, answer.status);
    return { providerResourceId: id };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const found: FoundCampaign[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page < LOOKUP_MAX_PAGES; page++) {
      const answer = await this.http.call({
        method: 'GET',
        url: `${this.accountUrl(access.providerAccountId)}/campaigns`,
        headers: this.headers(access),
        query: { 'page.size': LOOKUP_PAGE_SIZE, 'page.token': pageToken },
      });
      if (answer.status !== 200) throw this.refusal(answer, 'campaign lookup');
      const body = (answer.json ?? {}) as { data?: unknown; pagination?: { next_url?: unknown } };
      if (!Array.isArray(body.data)) throw new ProviderError('transient', 'reddit_ads answered the campaign lookup without data', null, answer.status);
      for (const campaign of body.data as Array<{ id?: unknown; name?: unknown; created_at?: unknown }>)
        if (typeof campaign?.id === 'string' && carriesMarker(campaign.name, request.dispatchId))
          found.push({ providerResourceId: campaign.id, createdAt: typeof campaign.created_at === 'string' ? campaign.created_at : null });
      pageToken = nextPageToken(body.pagination?.next_url);
      if (!pageToken) break;
    }
    return oldestFirst(found);
  }

  async validateCampaign(_access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    this.campaignBody(request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /** The campaign as Reddit takes it (the `data` of the body), named with the dispatch's marker: what a create sends, and all a dry run checks. */
  private campaignBody(request: LiveCampaignRequest): Record<string, unknown> {
    const spec = request.campaign;
    const objective = REDDIT_OBJECTIVES[objectiveOf(spec)];
    const end = lifetimeEnd(this.channel, spec);
    return {
      name: markedName(spec.name, request.dispatchId, NAME_MAX_LENGTH),
      objective: objective.objective,
      configured_status: 'PAUSED',
      is_campaign_budget_optimization: true,
      goal_type: spec.budget.type === 'daily' ? 'DAILY_SPEND' : 'LIFETIME_SPEND',
      goal_value: toMicros(spec.budget.amount_micros),
      bid_strategy: 'MAXIMIZE_VOLUME',
      bid_type: objective.bidType,
      start_time: isoSeconds(spec.schedule.start_at),
      ...(end ? { end_time: isoSeconds(end) } : {}),
    };
  }

  /** The token endpoint on www.reddit.com: form body, client as HTTP Basic. */
  private async grant(form: Record<string, string>): Promise<TokenSet> {
    const client = requireClient(this.settings);
    const answer = await this.http.call({
      method: 'POST',
      url: this.settings.tokenUrl,
      headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`, 'user-agent': USER_AGENT },
      form,
    });
    const body = (answer.json ?? {}) as RedditError & { access_token?: unknown };
    if (answer.status === 200 && typeof body.access_token === 'string') return tokenSetFrom(this.channel, answer.json);
    if (answer.status === 429 || answer.status >= 500) throw this.refusal(answer, 'token grant');
    const said = typeof body.error_description === 'string' ? body.error_description : typeof body.message === 'string' ? body.message : null;
    // A 401 here (`{"message": "Unauthorized", "error": 401}`) is the HTTP Basic client refused: the operator's, not the person's.
    throw grantRefusal(
      this.channel,
      answer.status,
      typeof body.error === 'string' ? body.error : null,
      said,
      answer.status === 200 ? 'token_refused' : `http_${answer.status}`,
    );
  }

  private accountUrl(adAccountId: string): string {
    return `${this.settings.apiUrl}/api/${API_VERSION}/ad_accounts/${encodeURIComponent(adAccountId)}`;
  }

  private headers(access: AccountAccess): Record<string, string> {
    return { authorization: `Bearer ${access.accessToken}`, 'user-agent': USER_AGENT };
  }

  /** An answer that is not a success, classified by Reddit's rules. */
  private refusal(answer: NetworkAnswer, what: string): ProviderError {
    const body = (answer.json ?? {}) as RedditError;
    const nested = typeof body.error === 'object' && body.error !== null ? (body.error as { code?: unknown; message?: unknown }) : {};
    const rawCode = nested.code ?? (typeof body.error === 'string' ? body.error : undefined);
    const code = rawCode === undefined || rawCode === null ? null : String(rawCode);
    const said = nested.message ?? body.message;
    const message = typeof said === 'string' && said ? said : `reddit_ads refused the ${what} (HTTP ${answer.status})`;
    if (answer.status === 401) return new ProviderError('auth', `reddit_ads refused the access token: ${message}`, code ?? 'unauthorized', 401);
    if (answer.status === 429)
      return new ProviderError(
        'rate_limited',
        `reddit_ads asks to slow down: ${message}`,
        code ?? 'rate_limited',
        429,
        answer.retryAfterMs ?? rateLimitReset(answer),
      );
    if (answer.status >= 500) return new ProviderError('transient', `reddit_ads failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
    if (answer.status === 403 || answer.status === 404)
      return new ProviderError(
        'account_unreachable',
        `reddit_ads: the token cannot reach this ad account: ${message}`,
        code ?? `http_${answer.status}`,
        answer.status,
      );
    return new ProviderError('validation', message, code ?? `http_${answer.status}`, answer.status);
  }
}

/** The wait a 429 names without Retry-After: IETF `RateLimit: ...reset=N` or `X-Ratelimit-Reset: N` (seconds). */
function rateLimitReset(answer: NetworkAnswer): number | null {
  const ietf = /(?:^|[;,\s])(?:reset|t)=(\d+)/.exec(answer.headers['ratelimit'] ?? '');
  const seconds = Number(ietf?.[1] ?? answer.headers['x-ratelimit-reset']);
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds * 1000) : null;
}

/** ISO 8601 UTC to the second: `2027-05-01T16:00:00Z`. */
function isoSeconds(instant: string): string {
  return new Date(instant).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The `page.token` of Reddit's `pagination.next_url`; undefined on the last page. */
function nextPageToken(nextUrl: unknown): string | undefined {
  if (typeof nextUrl !== 'string' || !nextUrl) return undefined;
  try {
    return new URL(nextUrl).searchParams.get('page.token') ?? undefined;
  } catch {
    return undefined;
  }
}
