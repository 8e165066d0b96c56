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
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, exchangeAuthorizationCode, refreshAccessToken, requireClient } from '../oauth2';
import { lifetimeEnd, objectiveOf } from '../unified-campaign';

/**
 * Snapchat Marketing API (Ads API v1): every fact of the network lives in this file.
 *
 * - OAuth 2: consent at `accounts.snapchat.com/login/oauth2/authorize` (`response_type=code`,
 *   scope `snapchat-marketing-api`); code exchange and refresh at
 *   `accounts.snapchat.com/login/oauth2/access_token` (form body, client id and secret in the body).
 *   Access tokens live about an hour (trust `expires_in`); a refresh token is issued and is used
 *   again for every refresh. A refused refresh is an RFC 6749 error (`invalid_grant`).
 * - Every call: `Authorization: Bearer <token>`. Answers are wrapped: `{request_status, request_id,
 *   <plural>: [{sub_request_status, <singular>: {...}}]}`; errors are `{request_status: "ERROR",
 *   request_id, debug_message, display_message, error_code}`. A batch write may answer with a
 *   failing `sub_request_status` and its `sub_request_error_reason` instead.
 * - Ad account read: `GET /v1/adaccounts/{id}`: `adaccounts[0].adaccount.currency` and `.timezone`
 *   (IANA names).
 * - Campaign create: `POST /v1/adaccounts/{id}/campaigns` with `{campaigns: [{...}]}`; `status` and
 *   `start_time` are required; budgets in micro-currency (`daily_budget_micro`, or
 *   `lifetime_spend_cap_micro` for a lifetime budget); `start_time` / `end_time` ISO 8601 with an
 *   offset (we write them in the ad account's time zone); the id is `campaigns[0].campaign.id`.
 *   Created PAUSED: a campaign without ad squads delivers nothing anyway, and nobody spends by accident.
 * - The objective goes in `objective_v2_properties.objective_v2_type` (AWARENESS_AND_ENGAGEMENT,
 *   SALES, TRAFFIC, APP_PROMOTION, LEADS), which replaces the deprecated `objective` field.
 *   CHANNELS.md's `WEB_CONVERSION` is that deprecated field's name for SALES (unconfirmed that
 *   Snap still accepts it; the deprecated enum has no traffic value at all).
 * - The dispatch's marker: Snap has no field for the caller's own reference, so the campaign's
 *   name carries it (`markedName`), shortened to Snap's documented maximum of 375 characters.
 * - Finding a campaign again: `GET /v1/adaccounts/{id}/campaigns?limit=1000` (Snap's pages hold
 *   50 to 1000; it has no name filter), at most 10 pages, following `paging.next_link`, whose
 *   `cursor` we send to our own API URL again rather than sending the token wherever the link
 *   points. Deleted campaigns are not listed (no `read_deleted_entities`). Kept: the names that
 *   carry the marker, oldest first by `created_at`, then by id (Snap's paging example lists
 *   newest first, so the 10 pages reach the recent campaigns a retry looks for; we sort anyway).
 * - Dry run: Snap documents no validate-only call, so `validateCampaign` builds the very body
 *   `createCampaign` would send (every rule above applies) and calls nothing: `checkedBy: 'rules'`.
 * - Re-authenticate: HTTP 401; a refused refresh. Slow down: HTTP 429 (20 requests/s per app,
 *   10 per token); Snap documents no Retry-After, so without one we wait one rate window (1 s).
 *   5xx: transient. 403 / 404 on the ad account: the token cannot reach it. Other 4xx: validation,
 *   with Snap's `display_message` / `debug_message` and `error_code`.
 * - Revocation (DELETE /v1/connections/:id): none. Snap's Marketing API authentication documents the
 *   consent page, the access_token grant and the refresh, and no revocation call (nor does Login
 *   Kit's OAuth 2 service, which issues these tokens). A delete destroys our copy of the tokens only.
 */
const API_VERSION = 'v1';
const SCOPES = ['snapchat-marketing-api'] as const;
/** One rate window of Snap's per-second limits, when a 429 names no delay. */
const RATE_WINDOW_MS = 1_000;
/** Snap's campaign `name`: "max length: 375 characters" (its campaign reference). */
const NAME_MAX_LENGTH = 375;
/** The largest page Snap serves (its pages hold 50 to 1000 entities). */
const LOOKUP_PAGE_SIZE = 1_000;
/** Bounds the lookup: 10 pages of 1000 reach far past any campaign a retry looks for. */
const LOOKUP_MAX_PAGES = 10;

/** Our objectives as Snap's objective_v2_type. */
export const SNAPCHAT_OBJECTIVES: Readonly<Record<Objective, string>> = {
  conversion: 'SALES',
  traffic: 'TRAFFIC',
  awareness: 'AWARENESS_AND_ENGAGEMENT',
  engagement: 'AWARENESS_AND_ENGAGEMENT',
  leads: 'LEADS',
  app_installs: 'APP_PROMOTION',
};

interface SnapError {
  request_status?: string;
  request_id?: string;
  debug_message?: string;
  display_message?: string;
  error_code?: string;
}

type SnapItem = { sub_request_status?: string; sub_request_error_reason?: string } & Record<string, unknown>;

export class SnapchatAds implements AdNetwork {
  readonly channel = 'snapchat_ads' as const;
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
      scope: SCOPES.join(' '),
      state: request.state,
    });
  }

  exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    return exchangeAuthorizationCode(this.http, this.settings, request.code, request.redirectUri);
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return refreshAccessToken(this.http, this.settings, refreshToken);
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const answer = await this.http.call({
      method: 'GET',
      url: this.url(`/adaccounts/${encodeURIComponent(access.providerAccountId)}`),
      headers: this.auth(access),
    });
    if (answer.status !== 200) throw this.refusal(answer, 'ad account read');
    const item = this.firstItem(answer, 'adaccounts');
    const account = item.adaccount as { currency?: unknown; timezone?: unknown } | undefined;
    const currency = account?.currency;
    const timezone = account?.timezone;
    if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency) || typeof timezone !== 'string' || !isIanaTimeZone(timezone))
      throw new ProviderError('transient', 'snapchat_ads answered the ad account read without a currency and time zone', null, answer.status);
    return { currency, timezone };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const campaign = this.campaignBody(access, request);
    const answer = await this.http.call({
      method: 'POST',
      url: this.campaignsUrl(access.providerAccountId),
      headers: this.auth(access),
      json: { campaigns: [campaign] },
    });
    if (answer.status !== 200) throw this.refusal(answer, 'campaign create');
    const created = this.firstItem(answer, 'campaigns').campaign as { id?: unknown } | undefined;
    if (typeof created?.id !== 'string' || !created.id)
      throw new ProviderError('transient', 'snapchat_ads answered the campaign create without a campaign id', null, answer.status);
    return { providerResourceId: created.id };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const found: FoundCampaign[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < LOOKUP_MAX_PAGES; page++) {
      const answer = await this.http.call({
        method: 'GET',
        url: this.campaignsUrl(access.providerAccountId),
        headers: this.auth(access),
        query: { limit: LOOKUP_PAGE_SIZE, cursor },
      });
      if (answer.status !== 200) throw this.refusal(answer, 'campaign lookup');
      const body = (answer.json ?? {}) as SnapError & { paging?: { next_link?: unknown }; campaigns?: unknown };
      if (body.request_status !== 'SUCCESS' || !Array.isArray(body.campaigns))
        throw new ProviderError('transient', 'snapchat_ads answered the campaign lookup without campaigns', body.error_code ?? null, answer.status);
      for (const item of body.campaigns as SnapItem[]) {
        const campaign = item?.campaign as { id?: unknown; name?: unknown; created_at?: unknown } | undefined;
        if (typeof campaign?.id === 'string' && carriesMarker(campaign.name, request.dispatchId))
          found.push({ providerResourceId: campaign.id, createdAt: typeof campaign.created_at === 'string' ? campaign.created_at : null });
      }
      cursor = nextCursor(body.paging?.next_link);
      if (!cursor) break;
    }
    return oldestFirst(found);
  }

  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    this.campaignBody(access, request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /** The campaign as Snap takes it (one element of `campaigns`), named with the dispatch's marker: what a create sends, and all a dry run checks. */
  private campaignBody(access: LiveAccess, request: LiveCampaignRequest): Record<string, unknown> {
    const spec = request.campaign;
    const objective = SNAPCHAT_OBJECTIVES[objectiveOf(spec)];
    const end = lifetimeEnd(this.channel, spec);
    const micros = toMicros(spec.budget.amount_micros);
    return {
      ad_account_id: access.providerAccountId,
      name: markedName(spec.name, request.dispatchId, NAME_MAX_LENGTH),
      status: 'PAUSED',
      objective_v2_properties: { objective_v2_type: objective },
      start_time: isoWithOffset(spec.schedule.start_at, access.account.timezone),
      ...(end ? { end_time: isoWithOffset(end, access.account.timezone) } : {}),
      ...(spec.budget.type === 'daily' ? { daily_budget_micro: micros } : { lifetime_spend_cap_micro: micros }),
    };
  }

  private campaignsUrl(adAccountId: string): string {
    return this.url(`/adaccounts/${encodeURIComponent(adAccountId)}/campaigns`);
  }

  private url(path: string): string {
    return `${this.settings.apiUrl}/${API_VERSION}${path}`;
  }

  private auth(access: AccountAccess): Record<string, string> {
    return { authorization: `Bearer ${access.accessToken}` };
  }

  /** The first entry of a wrapped answer; a failing sub-request is Snap's validation refusal. */
  private firstItem(answer: NetworkAnswer, plural: string): SnapItem {
    const body = (answer.json ?? {}) as Record<string, unknown> & SnapError;
    const items = body[plural];
    const item = Array.isArray(items) ? (items[0] as SnapItem | undefined) : undefined;
    if (item && item.sub_request_status && item.sub_request_status !== 'SUCCESS')
      throw new ProviderError(
        'validation',
        item.sub_request_error_reason ?? `snapchat_ads refused the request (${item.sub_request_status})`,
        body.error_code ?? 'sub_request_error',
        answer.status,
      );
    if (!item || (body.request_status && body.request_status !== 'SUCCESS'))
      throw new ProviderError('transient', `snapchat_ads answered without ${plural}`, body.error_code ?? null, answer.status);
    return item;
  }

  /** An answer other than 200, classified by Snap's rules. */
  private refusal(answer: NetworkAnswer, what: string): ProviderError {
    const body = (answer.json ?? {}) as SnapError & { [plural: string]: unknown };
    const code = typeof body.error_code === 'string' ? body.error_code : null;
    const message = body.display_message ?? body.debug_message ?? `snapchat_ads refused the ${what} (HTTP ${answer.status})`;
    if (answer.status === 401) return new ProviderError('auth', `snapchat_ads refused the access token: ${message}`, code ?? 'unauthorized', 401);
    if (answer.status === 429)
      return new ProviderError('rate_limited', 'snapchat_ads asks to slow down (HTTP 429)', code ?? 'rate_limited', 429, answer.retryAfterMs ?? RATE_WINDOW_MS);
    if (answer.status >= 500) return new ProviderError('transient', `snapchat_ads failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
    if (answer.status === 403 || answer.status === 404)
      return new ProviderError(
        'account_unreachable',
        `snapchat_ads: the token cannot reach this ad account: ${message}`,
        code ?? `http_${answer.status}`,
        answer.status,
      );
    const failed = Object.values(body).find(
      (value): value is SnapItem[] => Array.isArray(value) && (value[0] as SnapItem | undefined)?.sub_request_error_reason !== undefined,
    );
    const reason = failed?.[0]?.sub_request_error_reason;
    return new ProviderError('validation', reason ?? message, code ?? `http_${answer.status}`, answer.status);
  }
}

/** The `cursor` of Snap's `paging.next_link`; undefined on the last page. */
function nextCursor(nextLink: unknown): string | undefined {
  if (typeof nextLink !== 'string' || !nextLink) return undefined;
  try {
    return new URL(nextLink).searchParams.get('cursor') ?? undefined;
  } catch {
    return undefined;
  }
}
