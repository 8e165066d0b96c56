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
import { carriesMarker, markedName, oldestFirst } from '../campaign-marker';
import { toMinorUnits } from '../budget-units';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { clientRefused, consentUrl, requireClient, tokenSetFrom } from '../oauth2';
import { objectiveOf } from '../unified-campaign';

/**
 * Meta Marketing API (Graph API), shared/CHANNELS.md. Every fact of the network is in this file.
 *
 * - Graph version v24.0 (also in the default consent and token URLs of network-settings.ts).
 *   (unconfirmed) whether a newer version is current when this runs; versions live about two years.
 * - Token as `Authorization: Bearer`; JSON bodies.
 * - OAuth: consent at www.facebook.com/v{N}/dialog/oauth (scopes comma-separated); the code is
 *   traded with a GET on the token URL, and the short-lived token then for a long-lived one
 *   (`grant_type=fb_exchange_token`, about 60 days). Meta issues NO refresh token: `refresh`
 *   is refused as `auth`, and a token near its end needs the person to consent again.
 * - Budgets in Meta's "offset" of the currency, which is NOT always ISO 4217's exponent: offset 1
 *   (no decimals) for CLP COP CRC HUF ISK IDR JPY KRW PYG TWD VND, 100 for every other supported
 *   currency, including BHD and JOD (three decimals in ISO). KWD, OMR, TND are not ad account
 *   currencies at Meta. (Meta's currency table, read late 2026; CHANNELS.md says ISO exponents.)
 * - The campaign carries the budget (campaign budget optimization), `special_ad_categories: []`
 *   and is created PAUSED. The schedule lives on ad sets, so none is sent here.
 * - Errors come as `{"error": {message, type, code, error_subcode, fbtrace_id}}`, usually HTTP 400
 *   whatever the cause: classified by `code`, never by status.
 * - The dispatch's marker is a suffix of the campaign name (campaign-marker.ts); names are kept to
 *   400 characters (unconfirmed: Meta documents no campaign name limit; 400 is the Ads Manager's).
 *   A campaign is found again with `GET act_{id}/campaigns?filtering=[{"field":"name",
 *   "operator":"CONTAIN","value":"<dispatch id>"}]&fields=id,name,created_time`, following
 *   `paging.cursors.after`; Meta lists campaigns that are not deleted (archived ones included).
 * - The dry run is the campaign create with `execution_options: ["validate_only"]`: Meta checks it
 *   as if it were made, answers `{"success": true}` or the same error the create would, and makes
 *   nothing.
 * - Revocation (DELETE /v1/connections/:id): `DELETE /me/permissions` with the user token (Graph
 *   API, "Revoking permissions"): the person's authorization of this app ends, for every
 *   connection made with it.
 */
export const META_GRAPH_VERSION = 'v24.0';
const SCOPES = ['ads_management', 'ads_read', 'business_management'];
/** (unconfirmed) the longest campaign name Meta takes. */
const MAX_NAME_LENGTH = 400;
/** Pages of a lookup at most (100 campaigns each): the name filter leaves one or two. */
const MAX_LOOKUP_PAGES = 10;

const OBJECTIVES: Record<Objective, string> = {
  conversion: 'OUTCOME_SALES',
  traffic: 'OUTCOME_TRAFFIC',
  awareness: 'OUTCOME_AWARENESS',
  leads: 'OUTCOME_LEADS',
  engagement: 'OUTCOME_ENGAGEMENT',
  app_installs: 'OUTCOME_APP_PROMOTION',
};

const NO_DECIMALS = ['CLP', 'COP', 'CRC', 'HUF', 'ISK', 'IDR', 'JPY', 'KRW', 'PYG', 'TWD', 'VND'];
const TWO_DECIMALS = [
  'DZD',
  'ARS',
  'AUD',
  'BHD',
  'BDT',
  'BOB',
  'BGN',
  'BRL',
  'GBP',
  'CAD',
  'CNY',
  'HRK',
  'CZK',
  'DKK',
  'EGP',
  'EUR',
  'GTQ',
  'HNL',
  'HKD',
  'INR',
  'ILS',
  'JOD',
  'KES',
  'MOP',
  'MYR',
  'MXN',
  'NZD',
  'NIO',
  'NGN',
  'NOK',
  'PKR',
  'PEN',
  'PHP',
  'PLN',
  'QAR',
  'RON',
  'RUB',
  'SAR',
  'RSD',
  'SGD',
  'ZAR',
  'SEK',
  'CHF',
  'THB',
  'TRY',
  'AED',
  'UAH',
  'USD',
  'UYU',
  'VES',
  'LKR',
];
/** Decimal places of Meta's offset (1 → 0, 100 → 2) per ad account currency. */
export const META_CURRENCY_DECIMALS: Readonly<Record<string, number>> = Object.freeze({
  ...Object.fromEntries(TWO_DECIMALS.map((code) => [code, 2])),
  ...Object.fromEntries(NO_DECIMALS.map((code) => [code, 0])),
});

/** `account_status` values whose account can run ads: 1 ACTIVE, 9 IN_GRACE_PERIOD. */
const USABLE_ACCOUNT_STATUSES = [1, 9];

/** Codes of "re-authenticate": 190 (token expired, revoked, changed password: subcodes 458, 459, 460, 463, 467), 102, and the permission codes 10 and 200-299. */
const isAuthCode = (code: number) => code === 190 || code === 102 || code === 10 || (code >= 200 && code <= 299);
/** Codes of "slow down": 4 (app), 17 (user), 32 (page), 613 (calls), 80000-80014 (business use case). */
const isRateCode = (code: number) => [4, 17, 32, 613].includes(code) || (code >= 80000 && code <= 80014);

export class MetaAds implements AdNetwork {
  readonly channel = 'meta_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string }): string {
    return consentUrl(this.settings, {
      client_id: requireClient(this.settings).clientId,
      redirect_uri: request.redirectUri,
      state: request.state,
      response_type: 'code',
      scope: SCOPES.join(','),
    });
  }

  async exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    const client = requireClient(this.settings);
    const shortLived = await this.token({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uri: request.redirectUri,
      code: request.code,
    });
    return this.token({
      grant_type: 'fb_exchange_token',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      fb_exchange_token: shortLived.accessToken,
    });
  }

  async refresh(_refreshToken: string): Promise<TokenSet> {
    throw new ProviderError('auth', 'meta_ads issues no refresh tokens: the person must consent again', 'no_refresh_token');
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const id = adAccountId(access.providerAccountId);
    const answer = await this.graph(access, 'GET', `act_${id}`, { query: { fields: 'account_status,currency,timezone_name' } });
    const account = answer as { account_status?: number; currency?: string; timezone_name?: string };
    if (!account.currency || !account.timezone_name)
      throw new ProviderError('account_unreachable', `meta_ads answered no currency or time zone for act_${id}`, null);
    if (account.account_status !== undefined && !USABLE_ACCOUNT_STATUSES.includes(account.account_status))
      throw new ProviderError(
        'account_unreachable',
        `meta_ads ad account act_${id} cannot run ads (account_status ${account.account_status})`,
        `account_status_${account.account_status}`,
      );
    return { currency: account.currency, timezone: account.timezone_name };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const id = adAccountId(access.providerAccountId);
    const answer = await this.graph(access, 'POST', `act_${id}/campaigns`, { json: campaignBody(request) });
    const created = (answer as { id?: unknown }).id;
    if (typeof created !== 'string' || !created) throw new ProviderError('transient', 'meta_ads answered no campaign id', null);
    return { providerResourceId: created };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const id = adAccountId(access.providerAccountId);
    const filtering = JSON.stringify([{ field: 'name', operator: 'CONTAIN', value: request.dispatchId }]);
    const found: Array<FoundCampaign & { name: unknown }> = [];
    let after: string | undefined;
    for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
      const query: Record<string, string> = { fields: 'id,name,created_time', filtering, limit: '100', ...(after ? { after } : {}) };
      const answer = (await this.graph(access, 'GET', `act_${id}/campaigns`, { query })) as {
        data?: Array<{ id?: unknown; name?: unknown; created_time?: unknown }>;
        paging?: { cursors?: { after?: string }; next?: string };
      };
      for (const campaign of answer.data ?? [])
        if (typeof campaign.id === 'string')
          found.push({
            providerResourceId: campaign.id,
            name: campaign.name,
            createdAt: typeof campaign.created_time === 'string' ? campaign.created_time : null,
          });
      after = answer.paging?.next ? answer.paging.cursors?.after : undefined;
      if (!after) break;
    }
    return oldestFirst(found.filter((campaign) => carriesMarker(campaign.name, request.dispatchId))).map(({ providerResourceId, createdAt }) => ({
      providerResourceId,
      createdAt,
    }));
  }

  /** The create itself, with `execution_options: ["validate_only"]`: checked by Meta, nothing made. */
  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    const id = adAccountId(access.providerAccountId);
    const answer = (await this.graph(access, 'POST', `act_${id}/campaigns`, { json: { ...campaignBody(request), execution_options: ['validate_only'] } })) as {
      success?: unknown;
    };
    if (answer.success !== true) throw new ProviderError('transient', 'meta_ads answered a validate-only call without success', null);
    return { checkedBy: 'provider', warnings: [] };
  }

  private async token(query: Record<string, string>): Promise<TokenSet> {
    const answer = await this.http.call({ method: 'GET', url: this.settings.tokenUrl, query });
    if (answer.status >= 200 && answer.status < 300) return tokenSetFrom(this.channel, answer.json);
    const graph = (answer.json as { error?: GraphError } | undefined)?.error;
    // The app refused: 101 "Invalid application ID", or 1 "Error validating client secret" (a code Meta otherwise uses for unknown errors).
    if (graph && (graph.code === 101 || (graph.code === 1 && /client secret/i.test(graph.message ?? ''))))
      throw clientRefused(this.channel, `${graph.code}: ${graph.message ?? graph.type ?? 'error'}`, answer.status);
    const error = metaError(answer);
    // A refused code or token at the token endpoint: consent again (rate limits and outages stay what they are).
    throw error.kind === 'rate_limited' || error.kind === 'transient' ? error : new ProviderError('auth', error.message, error.providerCode, error.httpStatus);
  }

  /** `DELETE /me/permissions` with the user token: the person's authorization of this app ends (Graph API, "Revoking permissions"). */
  async revokeTokens(tokens: { accessToken: string; refreshToken: string | null }): Promise<void> {
    const answer = await this.http.call({
      method: 'DELETE',
      url: `${this.settings.apiUrl}/${META_GRAPH_VERSION}/me/permissions`,
      headers: { authorization: `Bearer ${tokens.accessToken}` },
    });
    if (answer.status < 200 || answer.status >= 300) throw metaError(answer);
  }

  private async graph(access: AccountAccess, method: 'GET' | 'POST', path: string, body: { query?: Record<string, string>; json?: unknown }): Promise<unknown> {
    const answer = await this.http.call({
      method,
      url: `${this.settings.apiUrl}/${META_GRAPH_VERSION}/${path}`,
      headers: { authorization: `Bearer ${access.accessToken}` },
      query: body.query,
      json: body.json,
    });
    if (answer.status >= 200 && answer.status < 300) return answer.json ?? {};
    throw metaError(answer);
  }
}

/** The campaign as Meta takes it; every rule Meta would refuse before any call throws here (the dry run's too). */
function campaignBody(request: LiveCampaignRequest): Record<string, unknown> {
  const { campaign } = request;
  const objective = OBJECTIVES[objectiveOf(campaign)];
  const decimals = META_CURRENCY_DECIMALS[campaign.budget.currency];
  if (decimals === undefined) throw new ProviderError('validation', `meta_ads ad accounts do not bill in ${campaign.budget.currency}`, 'currency_unsupported');
  const amount = toMinorUnits(campaign.budget.amount_micros, campaign.budget.currency, decimals);
  return {
    name: markedName(campaign.name, request.dispatchId, MAX_NAME_LENGTH),
    objective,
    status: 'PAUSED',
    special_ad_categories: [],
    [campaign.budget.type === 'daily' ? 'daily_budget' : 'lifetime_budget']: amount,
  };
}

/** `act_123` or `123` → `123`. */
function adAccountId(providerAccountId: string): string {
  const id = providerAccountId.replace(/^act_/, '');
  if (!/^\d+$/.test(id)) throw new ProviderError('account_unreachable', `meta_ads ad account ids are digits (act_<digits>), not "${providerAccountId}"`, null);
  return id;
}

interface GraphError {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  error_user_msg?: string;
  is_transient?: boolean;
  fbtrace_id?: string;
}

/** Meta's error, classified by `code` (the status is 400 for nearly everything). */
export function metaError(answer: NetworkAnswer): ProviderError {
  const error = (answer.json as { error?: GraphError } | undefined)?.error;
  if (!error || typeof error.code !== 'number') {
    if (answer.status >= 500) return new ProviderError('transient', `meta_ads failed with HTTP ${answer.status}`, null, answer.status);
    if (answer.status === 429) return new ProviderError('rate_limited', 'meta_ads asks to slow down (HTTP 429)', null, 429, answer.retryAfterMs);
    return new ProviderError('validation', `meta_ads refused the call with HTTP ${answer.status}`, null, answer.status);
  }
  const code = error.code;
  const providerCode = error.error_subcode ? `${code}/${error.error_subcode}` : String(code);
  const message = `meta_ads: ${error.error_user_msg ?? error.message ?? error.type ?? 'error'}`;
  if (isAuthCode(code)) return new ProviderError('auth', message, providerCode, answer.status);
  if (isRateCode(code)) return new ProviderError('rate_limited', message, providerCode, answer.status, usageDelayMs(answer.headers) ?? answer.retryAfterMs);
  // 100/33: "Object with ID ... does not exist, cannot be loaded due to missing permissions"; 803: unknown alias.
  if ((code === 100 && error.error_subcode === 33) || code === 803) return new ProviderError('account_unreachable', message, providerCode, answer.status);
  if (code === 1 || code === 2 || error.is_transient === true || answer.status >= 500)
    return new ProviderError('transient', message, providerCode, answer.status);
  return new ProviderError('validation', message, providerCode, answer.status);
}

/**
 * Meta's delay before calls are allowed again: `X-Business-Use-Case-Usage` gives
 * `estimated_time_to_regain_access` in minutes per business and kind of call; `X-Ad-Account-Usage`
 * gives `reset_time_duration` in seconds. The longest wins; null when neither says.
 */
export function usageDelayMs(headers: Record<string, string>): number | null {
  const delays: number[] = [];
  const businessUsage = parseHeader(headers['x-business-use-case-usage']) as Record<string, Array<{ estimated_time_to_regain_access?: number }>> | null;
  for (const entries of Object.values(businessUsage ?? {}))
    for (const entry of Array.isArray(entries) ? entries : [])
      if (typeof entry?.estimated_time_to_regain_access === 'number') delays.push(entry.estimated_time_to_regain_access * 60_000);
  const accountUsage = parseHeader(headers['x-ad-account-usage']) as { reset_time_duration?: number } | null;
  if (typeof accountUsage?.reset_time_duration === 'number') delays.push(accountUsage.reset_time_duration * 1000);
  const longest = Math.max(0, ...delays);
  return longest > 0 ? longest : null;
}

function parseHeader(value: string | undefined): unknown {
  if (!value) return null;
  try {
    return JSON.parse(value);
  } catch {
    return null;
  }
}
