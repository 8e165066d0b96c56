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
import { toMicros } from '../budget-units';
import { carriesMarker, markedName } from '../campaign-marker';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, grantRefusal, requireClient, tokenSetFrom } from '../oauth2';
import { lifetimeEnd, objectiveOf, unsupportedObjective } from '../unified-campaign';

/**
 * Pinterest API v5 (ads): every fact of the network lives in this file.
 *
 * - OAuth 2: consent at `www.pinterest.com/oauth/` (`response_type=code`, scopes comma-separated:
 *   `ads:read,ads:write`); code exchange and refresh at `api.pinterest.com/v5/oauth/token`, form
 *   body, client id and secret as HTTP Basic. Access tokens live 30 days, refresh tokens 60 days;
 *   with "continuous refresh" every refresh answers a new refresh token (apps made before
 *   2025-09-25 opt in with `continuous_refresh=true` on the code exchange, which we always send;
 *   that newer apps ignore it is unconfirmed).
 * - Every call: `Authorization: Bearer <token>`. Errors are `{code, message}` with the HTTP status
 *   (401 "Authentication failed.", 403 no permission on the ad account, 404 "AdAccount not found.",
 *   429 rate limited).
 * - Ad account read: `GET /v5/ad_accounts/{id}`: `currency` at the top level. The v5 ad account
 *   has no time zone (unconfirmed that none exists elsewhere): we read `timezone` / `time_zone`
 *   when present and otherwise keep UTC, which nothing of Pinterest's campaign create depends on
 *   (its times are Unix seconds).
 * - Campaign create: `POST /v5/ad_accounts/{id}/campaigns` with an array of campaigns (at most 30);
 *   `ad_account_id`, `name` and `objective_type` required; `daily_spend_cap` or
 *   `lifetime_spend_cap` in micro-currency (never both); `start_time` / `end_time` in Unix
 *   seconds; `status` defaults to ACTIVE, so we send PAUSED. It answers 200
 *   `{items: [{data: {id, ...}, exceptions: [{code, message}]}]}`: an item with exceptions is
 *   Pinterest's refusal of that campaign.
 * - Objectives: WEB_CONVERSION for conversion (CHANNELS.md; Pinterest's 2026 objective
 *   simplification deprecates it for SALES), CONSIDERATION for traffic and engagement (Pin and
 *   outbound clicks), AWARENESS, LEADS (introduced by the same simplification). Pinterest has no
 *   app-install objective in v5: `app_installs` is refused before any call.
 * - The dispatch's marker: a v5 campaign has no field for the caller's own reference that can be
 *   searched, so its name carries it (`markedName`), shortened to 255 characters (unconfirmed:
 *   Pinterest's reference states no maximum for a campaign name).
 * - Finding a campaign again: `GET /v5/ad_accounts/{id}/campaigns?page_size=250&order=DESCENDING`
 *   (250 is the largest page; there is no name filter; DESCENDING by id puts the newest first),
 *   following `bookmark` for at most 10 pages. No `entity_statuses`: Pinterest's default, ACTIVE
 *   and PAUSED, holds what we create (PAUSED) and what a partner may have started; an ARCHIVED
 *   campaign is not found again, as Google's REMOVED ones are not. Kept: the names that carry the
 *   marker, oldest first by `created_time` (Unix seconds), then by id.
 * - Dry run: Pinterest has no validate-only call for campaigns, so `validateCampaign` builds the
 *   very body `createCampaign` would send (every rule above applies) and calls nothing:
 *   `checkedBy: 'rules'`.
 * - Re-authenticate: HTTP 401; a refused refresh. Slow down: 429, after `Retry-After` or, failing
 *   that, `X-RateLimit-Reset` seconds (unconfirmed header). 5xx transient. 403 / 404 on the ad
 *   account: unreachable. Other 4xx: validation with Pinterest's `message` and `code`.
 * - Revocation (DELETE /v1/connections/:id): none. Pinterest v5 documents `POST /v5/oauth/token/revoke`
 *   (HTTP Basic client, form `token`, `token_type_hint`), but "only tokens issued for system users are
 *   currently supported" (pinterest/api-description, v5/openapi.yaml, operation `token/revoke`): a
 *   connection holds a person's grant, which it would refuse. The person removes the app in their
 *   Pinterest settings; a delete destroys our copy of the tokens only.
 */
const API_VERSION = 'v5';
const SCOPES = ['ads:read', 'ads:write'] as const;
/** Unconfirmed: Pinterest's v5 reference gives a campaign name no maximum length. */
const NAME_MAX_LENGTH = 255;
/** `page_size` of the campaign list: at most 250. */
const LOOKUP_PAGE_SIZE = 250;
/** Bounds the lookup: 10 pages, newest first, reach far past any campaign a retry looks for. */
const LOOKUP_MAX_PAGES = 10;

export const PINTEREST_OBJECTIVES: Readonly<Record<Exclude<Objective, 'app_installs'>, string>> = {
  conversion: 'WEB_CONVERSION',
  traffic: 'CONSIDERATION',
  awareness: 'AWARENESS',
  engagement: 'CONSIDERATION',
  leads: 'LEADS',
};

interface PinterestError {
  code?: unknown;
  message?: unknown;
}

export class PinterestAds implements AdNetwork {
  readonly channel = 'pinterest_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string }): string {
    const { clientId } = requireClient(this.settings);
    return consentUrl(this.settings, {
      client_id: clientId,
      redirect_uri: request.redirectUri,
      response_type: 'code',
      scope: SCOPES.join(','),
      state: request.state,
    });
  }

  exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    return this.grant({ grant_type: 'authorization_code', code: request.code, redirect_uri: request.redirectUri, continuous_refresh: 'true' });
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return this.grant({ grant_type: 'refresh_token', refresh_token: refreshToken });
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const answer = await this.http.call({ method: 'GET', url: this.accountUrl(access.providerAccountId), headers: this.auth(access) });
    if (answer.status !== 200) throw this.refusal(answer, 'ad account read');
    const account = (answer.json ?? {}) as { currency?: unknown; timezone?: unknown; time_zone?: unknown };
    if (typeof account.currency !== 'string' || !/^[A-Z]{3}$/.test(account.currency) || account.currency === 'UNK')
      throw new ProviderError('transient', 'pinterest_ads answered the ad account read without a currency', null, answer.status);
    const timezone = [account.timezone, account.time_zone].find((zone): zone is string => typeof zone === 'string' && zone.includes('/'));
    return { currency: account.currency, timezone: timezone ?? 'UTC' };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const campaign = this.campaignBody(access, request);
    const answer = await this.http.call({
      method: 'POST',
      url: `${this.accountUrl(access.providerAccountId)}/campaigns`,
      headers: this.auth(access),
      json: [campaign],
    });
    if (answer.status !== 200) throw this.refusal(answer, 'campaign create');
    const items = ((answer.json ?? {}) as { items?: unknown }).items;
    const item = (Array.isArray(items) ? items[0] : undefined) as { data?: { id?: unknown }; exceptions?: PinterestError[] } | undefined;
    const exception = item?.exceptions?.[0];
    if (exception)
      throw new ProviderError(
        'validation',
        String(exception.message ?? 'pinterest_ads refused the campaign'),
        exception.code === undefined ? 'exception' : String(exception.code),
        answer.status,
      );
    const id = item?.data?.id;
    if (typeof id !== 'string' || !id)
      throw new ProviderError('transient', 'pinterest_ads answered the campaign create without a campaign id', null, answer.status);
    return { providerResourceId: id };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const found: Array<FoundCampaign & { seconds: number | null }> = [];
    let bookmark: string | undefined;
    for (let page = 0; page < LOOKUP_MAX_PAGES; page++) {
      const answer = await this.http.call({
        method: 'GET',
        url: `${this.accountUrl(access.providerAccountId)}/campaigns`,
        headers: this.auth(access),
        query: { page_size: LOOKUP_PAGE_SIZE, order: 'DESCENDING', bookmark },
      });
      if (answer.status !== 200) throw this.refusal(answer, 'campaign lookup');
      const body = (answer.json ?? {}) as { items?: unknown; bookmark?: unknown };
      if (!Array.isArray(body.items)) throw new ProviderError('transient', 'pinterest_ads answered the campaign lookup without items', null, answer.status);
      for (const campaign of body.items as Array<{ id?: unknown; name?: unknown; created_time?: unknown }>) {
        if (typeof campaign?.id !== 'string' || !carriesMarker(campaign.name, request.dispatchId)) continue;
        const seconds = typeof campaign.created_time === 'number' ? campaign.created_time : null;
        found.push({ providerResourceId: campaign.id, createdAt: seconds === null ? null : new Date(seconds * 1000).toISOString(), seconds });
      }
      bookmark = typeof body.bookmark === 'string' && body.bookmark ? body.bookmark : undefined;
      if (!bookmark) break;
    }
    // Oldest first: by creation second, then by id (digits; a higher id is a later campaign).
    found.sort((a, b) => (a.seconds ?? Infinity) - (b.seconds ?? Infinity) || byDigits(a.providerResourceId, b.providerResourceId));
    return found.map(({ providerResourceId, createdAt }) => ({ providerResourceId, createdAt }));
  }

  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    this.campaignBody(access, request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /** The campaign as Pinterest takes it (one element of the array body), named with the dispatch's marker: what a create sends, and all a dry run checks. */
  private campaignBody(access: LiveAccess, request: LiveCampaignRequest): Record<string, unknown> {
    const spec = request.campaign;
    const wanted = objectiveOf(spec);
    if (wanted === 'app_installs') throw unsupportedObjective(this.channel, wanted, 'Pinterest API v5 has no app-install objective');
    const end = lifetimeEnd(this.channel, spec);
    const micros = toMicros(spec.budget.amount_micros);
    return {
      ad_account_id: access.providerAccountId,
      name: markedName(spec.name, request.dispatchId, NAME_MAX_LENGTH),
      status: 'PAUSED',
      objective_type: PINTEREST_OBJECTIVES[wanted],
      ...(spec.budget.type === 'daily' ? { daily_spend_cap: micros } : { lifetime_spend_cap: micros }),
      start_time: unixSeconds(spec.schedule.start_at),
      ...(end ? { end_time: unixSeconds(end) } : {}),
    };
  }

  /** The token endpoint: form body, client as HTTP Basic; a refusal is classified by `grantRefusal`, with Pinterest's words. */
  private async grant(form: Record<string, string>): Promise<TokenSet> {
    const client = requireClient(this.settings);
    const answer = await this.http.call({
      method: 'POST',
      url: this.settings.tokenUrl,
      headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` },
      form,
    });
    if (answer.status === 200) return tokenSetFrom(this.channel, answer.json);
    if (answer.status === 429 || answer.status >= 500) throw this.refusal(answer, 'token grant');
    const body = (answer.json ?? {}) as PinterestError & { error?: unknown; error_description?: unknown };
    const code = typeof body.error === 'string' ? body.error : body.code !== undefined && body.code !== null ? String(body.code) : null;
    const said = body.error_description ?? body.message;
    // A 401 here is the HTTP Basic client refused ({code: 2, "Authentication failed."}): the operator's, not the person's.
    throw grantRefusal(this.channel, answer.status, code, typeof said === 'string' ? said : null);
  }

  private accountUrl(adAccountId: string): string {
    return `${this.settings.apiUrl}/${API_VERSION}/ad_accounts/${encodeURIComponent(adAccountId)}`;
  }

  private auth(access: AccountAccess): Record<string, string> {
    return { authorization: `Bearer ${access.accessToken}` };
  }

  /** An answer other than 200, classified by Pinterest's rules. */
  private refusal(answer: NetworkAnswer, what: string): ProviderError {
    const body = (answer.json ?? {}) as PinterestError;
    const code = body.code === undefined || body.code === null ? null : String(body.code);
    const message = typeof body.message === 'string' ? body.message : `pinterest_ads refused the ${what} (HTTP ${answer.status})`;
    if (answer.status === 401) return new ProviderError('auth', `pinterest_ads refused the access token: ${message}`, code ?? 'unauthorized', 401);
    if (answer.status === 429) {
      const reset = Number(answer.headers['x-ratelimit-reset']);
      const delay = answer.retryAfterMs ?? (Number.isFinite(reset) && reset > 0 ? reset * 1000 : null);
      return new ProviderError('rate_limited', `pinterest_ads asks to slow down: ${message}`, code ?? 'rate_limited', 429, delay);
    }
    if (answer.status >= 500)
      return new ProviderError('transient', `pinterest_ads failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
    if (answer.status === 403 || answer.status === 404)
      return new ProviderError(
        'account_unreachable',
        `pinterest_ads: the token cannot reach this ad account: ${message}`,
        code ?? `http_${answer.status}`,
        answer.status,
      );
    return new ProviderError('validation', message, code ?? `http_${answer.status}`, answer.status);
  }
}

/** An ISO 8601 instant as Pinterest's Unix seconds. */
function unixSeconds(instant: string): number {
  return Math.floor(Date.parse(instant) / 1000);
}

/** Two ids of digits in numeric order (they may pass 2^53). */
function byDigits(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
