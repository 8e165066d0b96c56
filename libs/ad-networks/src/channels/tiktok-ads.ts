import { Objective, ProviderError } from '@campaign-ops/channels';
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
  TokenSet,
} from '../ad-network.port';
import { isIanaTimeZone } from '../account-time';
import { toMajorUnitNumber } from '../budget-units';
import { carriesMarker, markedName, oldestFirst } from '../campaign-marker';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { clientRefused, consentUrl, requireClient } from '../oauth2';
import { objectiveOf } from '../unified-campaign';

/**
 * TikTok API for Business (Marketing API v1.3), shared/CHANNELS.md. Every fact of the network is here.
 *
 * - Header `Access-Token` (not Bearer). Answers are HTTP 200 with `{code, message, request_id, data}`;
 *   a non-zero `code` is the error, whatever the status.
 * - OAuth: the consent page takes `app_id`, `redirect_uri`, `state`; the scopes are the app's,
 *   chosen in the developer portal, so none travel in the URL. The browser comes back with
 *   `auth_code` (unconfirmed: and the same value as `code`). The token call is
 *   `POST /open_api/v1.3/oauth2/access_token/` with JSON `{app_id, secret, auth_code}`; the
 *   Marketing API token is long-term: no expiry and NO refresh token, so `refresh` is refused.
 * - Account read: `GET /open_api/v1.3/advertiser/info/?advertiser_ids=["id"]`, `data.list[0]`
 *   `currency` and `timezone` (an IANA name, "Etc/GMT+8" style included; `display_timezone`
 *   when `timezone` is not one (unconfirmed)).
 * - Campaign: `POST /open_api/v1.3/campaign/create/`, `budget_mode` BUDGET_MODE_DAY or
 *   BUDGET_MODE_TOTAL and `budget` in major units (a number). The schedule lives on ad groups, so
 *   none is sent. Created with TikTok's default status (the CHANNELS.md table asks no pause).
 * - The dispatch's marker: a TikTok campaign has no field for the caller's own reference, so its
 *   `campaign_name` carries it (`markedName`). TikTok takes up to 512 characters, counting each
 *   Chinese or Japanese character as two (and no emoji): the partner's part is shortened until
 *   the marked name fits that count (Korean counted as two too, to be safe: unconfirmed).
 * - Finding a campaign again: `GET /open_api/v1.3/campaign/get/?advertiser_id=…&filtering=
 *   {"campaign_name":"<dispatch id>"}&fields=["campaign_id","campaign_name","create_time"]&page=N
 *   &page_size=1000` (the name filter is a fuzzy match; 1000 is the largest page), following
 *   `data.page_info.total_page` for at most 10 pages. TikTok's default status filter
 *   (STATUS_NOT_DELETE, unconfirmed) leaves deleted campaigns out. Kept: the names that carry the
 *   marker, oldest first by `create_time` ("YYYY-MM-DD HH:MM:SS", UTC; answered as ISO 8601 with
 *   its Z), then by id.
 * - Dry run: TikTok has no validate-only call for a campaign create, so `validateCampaign` builds
 *   the very body `createCampaign` would send (every rule above applies) and calls nothing:
 *   `checkedBy: 'rules'`.
 * - Error codes: 40102 expired, 40104/40105 invalid, 40106 token/advertiser mismatch: auth;
 *   40100 (QPS), 40016, 40133: slow down, TikTok names no delay; 5xxxx: TikTok's own failure
 *   (transient); 40001 (unconfirmed) no permission on the advertiser: unreachable; at the token call
 *   (no advertiser there) 40001 is the app id or secret refused (unconfirmed): the operator's
 *   configuration, `validation` `invalid_client`.
 * - Revocation (DELETE /v1/connections/:id): none. TikTok's Marketing API documents no revocation
 *   of an advertiser's access token (the advertiser removes the app in TikTok Ads Manager). A
 *   delete destroys our copy of the tokens only.
 */
export const TIKTOK_API_PATH = '/open_api/v1.3';

const OBJECTIVES: Record<Objective, string> = {
  conversion: 'WEB_CONVERSIONS',
  traffic: 'TRAFFIC',
  awareness: 'REACH',
  leads: 'LEAD_GENERATION',
  engagement: 'ENGAGEMENT',
  app_installs: 'APP_PROMOTION',
};

/** `campaign_name`'s limit, in TikTok's count (a CJK character is two). */
const NAME_MAX_CHARS = 512;
/** `page_size` of campaign/get: at most 1000. */
const LOOKUP_PAGE_SIZE = 1000;
/** Bounds the lookup; the name filter leaves one or two campaigns, so one page is the rule. */
const LOOKUP_MAX_PAGES = 10;

const AUTH_CODES = [40102, 40104, 40105, 40106];
const RATE_CODES = [40100, 40016, 40133];
const UNREACHABLE_CODES = [40001];
/** The same 40001 answered by the token call, where no advertiser is involved: the app id or secret refused (unconfirmed). */
const APP_REFUSED_CODE = 40001;

export class TiktokAds implements AdNetwork {
  readonly channel = 'tiktok_ads' as const;
  /** Chosen for the app in TikTok's developer portal: none are asked for in the consent URL. */
  readonly scopes: readonly string[] = [];

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string }): string {
    return consentUrl(this.settings, { app_id: requireClient(this.settings).clientId, state: request.state, redirect_uri: request.redirectUri });
  }

  async exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    const client = requireClient(this.settings);
    const answer = await this.http.call({
      method: 'POST',
      url: this.settings.tokenUrl,
      json: { app_id: client.clientId, secret: client.clientSecret, auth_code: request.code },
    });
    let data: unknown;
    try {
      data = tiktokData(answer);
    } catch (error) {
      const refusal = error as ProviderError;
      if (refusal.kind === 'rate_limited' || refusal.kind === 'transient') throw refusal;
      // 40001 at the token call: the app id or secret refused (unconfirmed code), the operator's configuration.
      if (refusal.providerCode === String(APP_REFUSED_CODE))
        throw clientRefused(this.channel, `${refusal.providerCode}: ${refusal.message}`, refusal.httpStatus);
      // A refused auth_code: the person must consent again.
      throw new ProviderError('auth', refusal.message, refusal.providerCode, refusal.httpStatus);
    }
    const accessToken = (data as { access_token?: unknown }).access_token;
    if (typeof accessToken !== 'string' || !accessToken) throw new ProviderError('transient', 'tiktok_ads answered no access_token', null);
    return { accessToken, refreshToken: null, expiresAt: null };
  }

  async refresh(_refreshToken: string): Promise<TokenSet> {
    throw new ProviderError(
      'auth',
      'tiktok_ads issues no refresh tokens (its tokens do not expire until revoked): the person must consent again',
      'no_refresh_token',
    );
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const data = await this.call(access, 'GET', '/advertiser/info/', {
      query: {
        advertiser_ids: JSON.stringify([access.providerAccountId]),
        fields: JSON.stringify(['advertiser_id', 'currency', 'timezone', 'display_timezone', 'status']),
      },
    });
    const advertiser = (data as { list?: Array<{ currency?: string; timezone?: string; display_timezone?: string }> }).list?.[0];
    if (!advertiser?.currency) throw new ProviderError('account_unreachable', `tiktok_ads answered no advertiser ${access.providerAccountId}`, null);
    const timezone = [advertiser.timezone, advertiser.display_timezone].find((zone): zone is string => !!zone && isIanaTimeZone(zone));
    if (!timezone) throw new ProviderError('transient', `tiktok_ads answered a time zone that is no IANA name: ${advertiser.timezone}`, null);
    return { currency: advertiser.currency, timezone };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const data = await this.call(access, 'POST', '/campaign/create/', { json: campaignBody(access, request) });
    const id = (data as { campaign_id?: unknown }).campaign_id;
    if ((typeof id !== 'string' && typeof id !== 'number') || id === '') throw new ProviderError('transient', 'tiktok_ads answered no campaign_id', null);
    return { providerResourceId: String(id) };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const found: FoundCampaign[] = [];
    for (let page = 1; page <= LOOKUP_MAX_PAGES; page++) {
      const data = (await this.call(access, 'GET', '/campaign/get/', {
        query: {
          advertiser_id: access.providerAccountId,
          filtering: JSON.stringify({ campaign_name: request.dispatchId }),
          fields: JSON.stringify(['campaign_id', 'campaign_name', 'create_time']),
          page: String(page),
          page_size: String(LOOKUP_PAGE_SIZE),
        },
      })) as { list?: Array<{ campaign_id?: unknown; campaign_name?: unknown; create_time?: unknown }>; page_info?: { total_page?: unknown } };
      for (const campaign of data.list ?? []) {
        const id = typeof campaign.campaign_id === 'number' ? String(campaign.campaign_id) : campaign.campaign_id;
        if (typeof id !== 'string' || !id || !carriesMarker(campaign.campaign_name, request.dispatchId)) continue;
        found.push({ providerResourceId: id, createdAt: typeof campaign.create_time === 'string' ? utcInstant(campaign.create_time) : null });
      }
      const totalPages = Number(data.page_info?.total_page ?? 1);
      if (!(page < totalPages)) break;
    }
    // Oldest first: by creation second, then by id (a later campaign has a higher id).
    return oldestFirst(found);
  }

  /** No validate-only call at TikTok: the body a create would send is built (its rules applied), nothing is called. */
  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    campaignBody(access, request);
    return { checkedBy: 'rules', warnings: [] };
  }

  private async call(access: AccountAccess, method: 'GET' | 'POST', path: string, body: { query?: Record<string, string>; json?: unknown }): Promise<unknown> {
    const answer = await this.http.call({
      method,
      url: `${this.settings.apiUrl}${TIKTOK_API_PATH}${path}`,
      headers: { 'access-token': access.accessToken },
      query: body.query,
      json: body.json,
    });
    return tiktokData(answer);
  }
}

/** The campaign/create/ body, named with the dispatch's marker: what a create sends, and all a dry run checks. */
function campaignBody(access: LiveAccess, request: LiveCampaignRequest): Record<string, unknown> {
  const { campaign } = request;
  const objective = objectiveOf(campaign);
  return {
    advertiser_id: access.providerAccountId,
    campaign_name: campaignName(campaign.name, request.dispatchId),
    objective_type: OBJECTIVES[objective],
    ...(objective === 'app_installs' ? { app_promotion_type: 'APP_INSTALL' } : {}),
    budget_mode: campaign.budget.type === 'daily' ? 'BUDGET_MODE_DAY' : 'BUDGET_MODE_TOTAL',
    budget: toMajorUnitNumber(campaign.budget.amount_micros, campaign.budget.currency),
  };
}

/** Chinese, Japanese (and, unconfirmed, Korean) characters, which TikTok counts as two. */
const WIDE =
  /[\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA960-\uA97F\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]|[\u{20000}-\u{3FFFD}]/u;

/** A name's length as TikTok counts it. */
function tiktokNameLength(name: string): number {
  let length = 0;
  for (const char of name) length += WIDE.test(char) ? 2 : 1;
  return length;
}

/** The marked name, the partner's part shortened (never the marker) until TikTok's count fits. */
function campaignName(name: string, dispatchId: string): string {
  for (let max = NAME_MAX_CHARS; max > 0; max--) {
    const marked = markedName(name, dispatchId, max);
    if (tiktokNameLength(marked) <= NAME_MAX_CHARS) return marked;
  }
  return markedName(name, dispatchId, 0);
}

/**
 * TikTok's `create_time`, "YYYY-MM-DD HH:MM:SS" in UTC, as ISO 8601 (`…Z`), so that it is read as
 * UTC wherever it is compared; anything else is kept as TikTok gave it.
 */
function utcInstant(text: string): string {
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})$/.exec(text);
  return match ? `${match[1]}T${match[2]}Z` : text;
}

/** `data` of a TikTok answer whose `code` is 0; anything else as the ProviderError it means. */
export function tiktokData(answer: NetworkAnswer): unknown {
  const body = answer.json as { code?: unknown; message?: unknown; data?: unknown } | undefined;
  if (answer.status >= 500)
    return fail(
      new ProviderError(
        'transient',
        `tiktok_ads failed with HTTP ${answer.status}`,
        typeof body?.code === 'number' ? String(body.code) : null,
        answer.status,
        answer.retryAfterMs,
      ),
    );
  if (answer.status === 429) return fail(new ProviderError('rate_limited', 'tiktok_ads asks to slow down (HTTP 429)', null, 429, answer.retryAfterMs));
  if (typeof body?.code !== 'number')
    return fail(
      new ProviderError(
        answer.status >= 400 ? 'validation' : 'transient',
        `tiktok_ads answered HTTP ${answer.status} without its envelope`,
        null,
        answer.status,
      ),
    );
  if (body.code === 0) return body.data ?? {};
  const code = body.code;
  const message = `tiktok_ads: ${typeof body.message === 'string' ? body.message : `code ${code}`}`;
  if (AUTH_CODES.includes(code)) return fail(new ProviderError('auth', message, String(code), answer.status));
  if (RATE_CODES.includes(code)) return fail(new ProviderError('rate_limited', message, String(code), answer.status, answer.retryAfterMs));
  if (UNREACHABLE_CODES.includes(code)) return fail(new ProviderError('account_unreachable', message, String(code), answer.status));
  if (code >= 50000) return fail(new ProviderError('transient', message, String(code), answer.status));
  return fail(new ProviderError('validation', message, String(code), answer.status));
}

function fail(error: ProviderError): never {
  throw error;
}
