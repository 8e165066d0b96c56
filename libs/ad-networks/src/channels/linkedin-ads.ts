import { Objective, ProviderError } from '@campaign-ops/channels';
import { AccountAccess, AdNetwork, LiveCampaignRequest, NetworkSettings, ProviderAccount, TokenSet } from '../ad-network.port';
import { toMajorUnitString } from '../budget-units';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, exchangeAuthorizationCode, refreshAccessToken, requireClient } from '../oauth2';
import { objectiveOf, unsupportedObjective } from '../unified-campaign';

/**
 * LinkedIn Marketing API (versioned REST), shared/CHANNELS.md. Every fact of the network is here.
 *
 * - Headers `Linkedin-Version: 202605` (monthly versions, each sunset about a year later; (unconfirmed)
 *   that a newer one is not required when this runs) and `X-Restli-Protocol-Version: 2.0.0`.
 * - OAuth: scopes `r_ads rw_ads` space-separated; form token endpoint; access tokens last 60 days,
 *   refresh tokens 365 days and are NOT extended by use (a refresh answers the same refresh token
 *   with what is left of its life). Programmatic refresh is granted to approved apps only.
 * - Account read: `GET /rest/adAccounts/{id}`: `currency`; LinkedIn accounts have no time zone
 *   (reporting and schedules are UTC), so the time zone is UTC.
 * - Campaign: LinkedIn needs a campaign group; each dispatch gets its own (`adCampaignGroups`,
 *   ACTIVE, same name) (unconfirmed: that `campaignGroup` is required rather than defaulted),
 *   then `adCampaigns` with `dailyBudget`/`totalBudget` `{amount: "12.34", currencyCode}` in major
 *   units, `runSchedule.start`/`end` in epoch ms, created DRAFT (it has no creatives yet).
 *   (unconfirmed) the create-time requirements of `type`, `costType`, `locale` (en_US: a unified
 *   campaign carries no locale), `offsiteDeliveryEnabled`, `politicalIntent` and automated
 *   bidding by `optimizationTargetType` instead of a `unitCost`.
 *   Objectives: `WEBSITE_CONVERSION` (unconfirmed), `WEBSITE_VISIT`, `BRAND_AWARENESS`,
 *   `LEAD_GENERATION`, `ENGAGEMENT`; LinkedIn has none for app installs.
 *   The new id comes in the `x-restli-id` header (`x-linkedin-id` also seen).
 * - Errors: 401 re-authenticate; 403/404 the token cannot reach the account; 429 slow down, with
 *   no Retry-After: the daily quota resets at midnight UTC, which is the delay given; 5xx transient;
 *   400/422 validation with `errorDetails.inputErrors[].code` or `code`.
 */
export const LINKEDIN_VERSION = '202605';
const SCOPES = ['r_ads', 'rw_ads'];

const OBJECTIVES: Record<Exclude<Objective, 'app_installs'>, { objectiveType: string; optimizationTargetType: string }> = {
  conversion: { objectiveType: 'WEBSITE_CONVERSION', optimizationTargetType: 'MAX_CONVERSION' },
  traffic: { objectiveType: 'WEBSITE_VISIT', optimizationTargetType: 'MAX_CLICK' },
  awareness: { objectiveType: 'BRAND_AWARENESS', optimizationTargetType: 'MAX_REACH' },
  leads: { objectiveType: 'LEAD_GENERATION', optimizationTargetType: 'MAX_LEAD' },
  engagement: { objectiveType: 'ENGAGEMENT', optimizationTargetType: 'MAX_CLICK' },
};

/** Account statuses that cannot run campaigns. */
const CLOSED_STATUSES = ['CANCELED', 'PENDING_DELETION', 'REMOVED'];

export class LinkedinAds implements AdNetwork {
  readonly channel = 'linkedin_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
    /** The clock for LinkedIn's midnight-UTC quota reset. */
    private readonly now: () => number = Date.now,
  ) {}

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string }): string {
    return consentUrl(this.settings, {
      response_type: 'code',
      client_id: requireClient(this.settings).clientId,
      redirect_uri: request.redirectUri,
      state: request.state,
      scope: SCOPES.join(' '),
    });
  }

  exchangeCode(request: { code: string; redirectUri: string }): Promise<TokenSet> {
    return exchangeAuthorizationCode(this.http, this.settings, request.code, request.redirectUri);
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return refreshAccessToken(this.http, this.settings, refreshToken);
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const id = accountId(access.providerAccountId);
    const answer = await this.call(access, 'GET', `/rest/adAccounts/${id}`);
    const account = answer.json as { currency?: string; status?: string };
    if (!account?.currency) throw new ProviderError('account_unreachable', `linkedin_ads answered no currency for ad account ${id}`, null);
    if (account.status && CLOSED_STATUSES.includes(account.status))
      throw new ProviderError('account_unreachable', `linkedin_ads ad account ${id} is ${account.status}`, account.status);
    return { currency: account.currency, timezone: 'UTC' };
  }

  async createCampaign(access: AccountAccess & { account: ProviderAccount }, request: LiveCampaignRequest): Promise<{ providerResourceId: string }> {
    const { campaign } = request;
    const objective = objectiveOf(campaign);
    if (objective === 'app_installs') throw unsupportedObjective(this.channel, objective, 'LinkedIn has no app install objective');
    const id = accountId(access.providerAccountId);
    const account = `urn:li:sponsoredAccount:${id}`;
    const runSchedule = { start: Date.parse(campaign.schedule.start_at), ...(campaign.schedule.end_at ? { end: Date.parse(campaign.schedule.end_at) } : {}) };
    const money = { amount: toMajorUnitString(campaign.budget.amount_micros, campaign.budget.currency), currencyCode: campaign.budget.currency };

    const group = await this.call(access, 'POST', `/rest/adAccounts/${id}/adCampaignGroups`, { account, name: campaign.name, status: 'ACTIVE', runSchedule });
    const groupId = createdId(group, 'campaign group');
    const created = await this.call(access, 'POST', `/rest/adAccounts/${id}/adCampaigns`, {
      account,
      campaignGroup: `urn:li:sponsoredCampaignGroup:${groupId}`,
      name: campaign.name,
      type: 'SPONSORED_UPDATES',
      ...OBJECTIVES[objective],
      costType: 'CPM',
      [campaign.budget.type === 'daily' ? 'dailyBudget' : 'totalBudget']: money,
      runSchedule,
      status: 'DRAFT',
      locale: { country: 'US', language: 'en' },
      offsiteDeliveryEnabled: false,
      politicalIntent: 'NOT_POLITICAL',
    });
    return { providerResourceId: createdId(created, 'campaign') };
  }

  private async call(access: AccountAccess, method: 'GET' | 'POST', path: string, json?: unknown): Promise<NetworkAnswer> {
    const answer = await this.http.call({
      method,
      url: `${this.settings.apiUrl}${path}`,
      headers: { authorization: `Bearer ${access.accessToken}`, 'linkedin-version': LINKEDIN_VERSION, 'x-restli-protocol-version': '2.0.0' },
      json,
    });
    if (answer.status >= 200 && answer.status < 300) return answer;
    throw linkedinError(answer, this.now());
  }
}

function accountId(providerAccountId: string): string {
  const id = providerAccountId.replace(/^urn:li:sponsoredAccount:/, '');
  if (!/^\d+$/.test(id)) throw new ProviderError('account_unreachable', `linkedin_ads ad account ids are digits, not "${providerAccountId}"`, null);
  return id;
}

function createdId(answer: NetworkAnswer, what: string): string {
  const id = answer.headers['x-restli-id'] ?? answer.headers['x-linkedin-id'] ?? (answer.json as { id?: unknown } | undefined)?.id;
  if ((typeof id !== 'string' && typeof id !== 'number') || id === '') throw new ProviderError('transient', `linkedin_ads answered no id for the ${what}`, null);
  return String(id).replace(/^urn:li:sponsoredCampaign(Group)?:/, '');
}

interface LinkedinErrorBody {
  status?: number;
  serviceErrorCode?: number;
  code?: string;
  message?: string;
  errorDetails?: { inputErrors?: Array<{ code?: string; description?: string; input?: { inputPath?: { fieldPath?: string } } }> };
}

/** LinkedIn's error: the HTTP status says what, the body says which. */
export function linkedinError(answer: NetworkAnswer, now: number = Date.now()): ProviderError {
  const body = (answer.json ?? {}) as LinkedinErrorBody;
  const input = body.errorDetails?.inputErrors?.[0];
  const providerCode = input?.code ?? body.code ?? (body.serviceErrorCode !== undefined ? String(body.serviceErrorCode) : null);
  const where = input?.input?.inputPath?.fieldPath ? ` (${input.input.inputPath.fieldPath})` : '';
  const message = `linkedin_ads: ${input?.description ?? body.message ?? `HTTP ${answer.status}`}${where}`;
  const status = answer.status;
  if (status === 401) return new ProviderError('auth', message, providerCode, status);
  if (status === 403 || status === 404) return new ProviderError('account_unreachable', message, providerCode, status);
  if (status === 429) return new ProviderError('rate_limited', message, providerCode, status, answer.retryAfterMs ?? untilMidnightUtc(now));
  if (status >= 500) return new ProviderError('transient', message, providerCode, status, answer.retryAfterMs);
  return new ProviderError('validation', message, providerCode, status);
}

/** LinkedIn's daily quotas reset at midnight UTC. */
export function untilMidnightUtc(now: number): number {
  const next = new Date(now);
  next.setUTCHours(24, 0, 0, 0);
  return next.getTime() - now;
}
