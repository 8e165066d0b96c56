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
import { toMajorUnitString } from '../budget-units';
import { carriesMarker, markedName, oldestFirst } from '../campaign-marker';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, exchangeAuthorizationCode, refreshAccessToken, requireClient, revokeToken } from '../oauth2';
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
 * - The dispatch's marker: LinkedIn campaigns have no field for the caller's own reference, so
 *   the campaign's name carries it (`markedName`), and so does its campaign group's (the same
 *   name). Names are kept to 255 bytes of UTF-8 (unconfirmed: the limit third parties report;
 *   the marker's " · " is 4 bytes), the partner's part shortened, never the marker.
 * - Finding a campaign again: `GET /rest/adAccounts/{id}/adCampaigns?q=search&search=(name:(values:
 *   List(<marked name>)))&pageSize=1000`, following `metadata.nextPageToken` for at most 10
 *   pages. The whole marked name is searched, not the dispatch id alone: whether LinkedIn's name
 *   criterion matches exactly or by part is unconfirmed, and the whole name is found either way.
 *   The Rest.li structure travels unescaped and the name inside it percent-encoded once (spaces
 *   as %20, never "+", and `(),:'` escaped too): LinkedIn refuses an escaped structure
 *   (PARAM_INVALID) and reads "+" as a plus (unconfirmed, reported by integrators). Kept: the
 *   names that carry the marker, not REMOVED or PENDING_DELETION (a deleted campaign is not the
 *   dispatch's any more), oldest first by `changeAuditStamps.created.time`, then by id.
 * - A try makes two objects, the group then the campaign. A later try reuses the group an earlier
 *   one left: it looks the group up the same way (`adCampaignGroups?q=search&search=(name:…)`,
 *   the oldest marked one not removed) before creating one.
 * - Dry run: LinkedIn has no validate-only call for campaigns, so `validateCampaign` builds the
 *   very group and campaign bodies `createCampaign` sends (every rule above applies) and calls
 *   nothing: `checkedBy: 'rules'`.
 * - Errors: 401 re-authenticate; 403/404 the token cannot reach the account; 429 slow down, with
 *   no Retry-After: the daily quota resets at midnight UTC, which is the delay given; 5xx transient;
 *   400/422 validation with `errorDetails.inputErrors[].code` or `code`.
 * - Revocation (DELETE /v1/connections/:id): `POST /oauth/v2/revoke` with `client_id`,
 *   `client_secret` and `token` (LinkedIn's token revocation).
 */
export const LINKEDIN_VERSION = '202605';
const SCOPES = ['r_ads', 'rw_ads'];
/** (unconfirmed) the longest campaign or campaign group name, in UTF-8 bytes. */
const NAME_MAX_BYTES = 255;
/** `pageSize` of a search (cursor paging since 202401, default 100): 1000, the largest `count` of the older paging (unconfirmed for `pageSize`). */
const LOOKUP_PAGE_SIZE = 1000;
/** Bounds a lookup; the name criterion leaves one or two elements, so one page is the rule. */
const LOOKUP_MAX_PAGES = 10;
/** Statuses of a campaign or group that was deleted: not found again. */
const DELETED_STATUSES = ['REMOVED', 'PENDING_DELETION'];

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

  /** `POST https://www.linkedin.com/oauth/v2/revoke` with `client_id`, `client_secret` and `token` (LinkedIn's token revocation). */
  revokeTokens(tokens: { accessToken: string; refreshToken: string | null }): Promise<void> {
    return revokeToken(this.http, this.settings, 'revoke', tokens, 'body');
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

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const { id, group, campaign } = campaignBodies(access, request);
    // The group an earlier try of this dispatch made, if any: one group per dispatch.
    const [earlier] = await this.search(access, `/rest/adAccounts/${id}/adCampaignGroups`, group.name, request.dispatchId);
    const groupId =
      earlier?.providerResourceId ?? createdId(await this.call(access, 'POST', `/rest/adAccounts/${id}/adCampaignGroups`, group), 'campaign group');
    const created = await this.call(access, 'POST', `/rest/adAccounts/${id}/adCampaigns`, {
      ...campaign,
      campaignGroup: `urn:li:sponsoredCampaignGroup:${groupId}`,
    });
    return { providerResourceId: createdId(created, 'campaign') };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const id = accountId(access.providerAccountId);
    return this.search(access, `/rest/adAccounts/${id}/adCampaigns`, campaignName(request), request.dispatchId);
  }

  /** No validate-only call at LinkedIn: the bodies a create would send are built (their rules applied), nothing is called. */
  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    campaignBodies(access, request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /** The campaigns or groups (by `path`) named `name` that carry the dispatch's marker and are not deleted, oldest first. */
  private async search(access: AccountAccess, path: string, name: string, dispatchId: string): Promise<FoundCampaign[]> {
    const found: FoundCampaign[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page < LOOKUP_MAX_PAGES; page++) {
      // Built by hand: the Rest.li structure must not be percent-encoded (see the header).
      const query = `q=search&search=${restliNameSearch(name)}&pageSize=${LOOKUP_PAGE_SIZE}${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`;
      const answer = await this.call(access, 'GET', `${path}?${query}`);
      const body = (answer.json ?? {}) as { elements?: unknown; metadata?: { nextPageToken?: unknown } };
      if (!Array.isArray(body.elements)) throw new ProviderError('transient', 'linkedin_ads answered a search without elements', null, answer.status);
      for (const element of body.elements as Array<{ id?: unknown; name?: unknown; status?: unknown; changeAuditStamps?: { created?: { time?: unknown } } }>) {
        if ((typeof element.id !== 'number' && typeof element.id !== 'string') || !carriesMarker(element.name, dispatchId)) continue;
        if (DELETED_STATUSES.includes(String(element.status))) continue;
        const at = element.changeAuditStamps?.created?.time;
        found.push({ providerResourceId: String(element.id), createdAt: typeof at === 'number' ? new Date(at).toISOString() : null });
      }
      const next = body.metadata?.nextPageToken;
      pageToken = typeof next === 'string' && next ? next : undefined;
      if (!pageToken) break;
    }
    // Oldest first: by creation time, then by id (a later object has a higher id).
    return oldestFirst(found);
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

/**
 * The campaign group and the campaign (without its group) as LinkedIn takes them, both named with
 * the dispatch's marker: what a create sends, and all a dry run checks.
 */
function campaignBodies(
  access: LiveAccess,
  request: LiveCampaignRequest,
): { id: string; group: Record<string, unknown> & { name: string }; campaign: Record<string, unknown> } {
  const { campaign } = request;
  const objective = objectiveOf(campaign);
  if (objective === 'app_installs') throw unsupportedObjective('linkedin_ads', objective, 'LinkedIn has no app install objective');
  const id = accountId(access.providerAccountId);
  const account = `urn:li:sponsoredAccount:${id}`;
  const name = campaignName(request);
  const runSchedule = { start: Date.parse(campaign.schedule.start_at), ...(campaign.schedule.end_at ? { end: Date.parse(campaign.schedule.end_at) } : {}) };
  const money = { amount: toMajorUnitString(campaign.budget.amount_micros, campaign.budget.currency), currencyCode: campaign.budget.currency };
  return {
    id,
    group: { account, name, status: 'ACTIVE', runSchedule },
    campaign: {
      account,
      name,
      type: 'SPONSORED_UPDATES',
      ...OBJECTIVES[objective],
      costType: 'CPM',
      [campaign.budget.type === 'daily' ? 'dailyBudget' : 'totalBudget']: money,
      runSchedule,
      status: 'DRAFT',
      locale: { country: 'US', language: 'en' },
      offsiteDeliveryEnabled: false,
      politicalIntent: 'NOT_POLITICAL',
    },
  };
}

/** The marked name, the partner's part shortened (never the marker) until it fits LinkedIn's bytes. */
function campaignName(request: LiveCampaignRequest): string {
  for (let max = NAME_MAX_BYTES; max > 0; max--) {
    const marked = markedName(request.campaign.name, request.dispatchId, max);
    if (Buffer.byteLength(marked, 'utf8') <= NAME_MAX_BYTES) return marked;
  }
  return markedName(request.campaign.name, request.dispatchId, 0);
}

/**
 * `(name:(values:List(<name>)))`, ready for the query string: the structure as is, the name
 * percent-encoded once with Rest.li's reserved `(),:'` (and `!*`) escaped too, spaces as %20.
 */
export function restliNameSearch(name: string): string {
  const value = encodeURIComponent(name).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `(name:(values:List(${value})))`;
}

function accountId(providerAccountId: string): string {
  const id = providerAccountId.replace(/^urn:li:sponsoredAccount:/, '');
  if (!/^\d+$/.test(id)) throw new ProviderError('account_unreachable', `linkedin_ads ad account ids are digits, not "${providerAccountId}"`, null);
  return id;
}

function createdId(answer: NetworkAnswer, what: string): string {
  const id = answer.headers['x-restli-id'] ?? answer.headers['x-linkedin-id'] ?? (answer.json as { id?: unknown } | undefined)?.id;
  if ((typeof id !== 'string' && typeof id !== 'number') || id === '')
    throw new ProviderError('transient', `linkedin_ads answered no id for the ${what}`, null);
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
