import { CampaignSpec, Objective, ProviderError } from '@campaign-ops/channels';
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
import { byIdOrder, carriesMarker, markedName } from '../campaign-marker';
import { localDateTime } from '../account-time';
import { toMicros } from '../budget-units';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, exchangeAuthorizationCode, refreshAccessToken, requireClient, pkceChallenge, revokeToken } from '../oauth2';
import { lifetimeEnd, objectiveOf, unsupportedObjective } from '../unified-campaign';

/**
 * Google Ads API over REST (shared/CHANNELS.md). Every fact of the network is in this file.
 *
 * - Version v23: the first with `startDateTime`/`endDateTime` ("yyyy-MM-dd HH:mm:ss" in the
 *   account's time zone; v22 and before had `startDate`). Newer versions exist (v26 in late 2026);
 *   v23 is the one whose shapes were checked. Each version is sunset about a year after release.
 * - Headers: `Authorization: Bearer`, `developer-token`, `login-customer-id` when a manager account
 *   is used. The provider account id is the customer id (dashes allowed) or, through a manager,
 *   `<manager id>/<customer id>` (this service's convention, not Google's).
 * - Budgets in micros; a daily budget is `period: DAILY`, a lifetime one `period: CUSTOM_PERIOD`
 *   with `totalAmountMicros` and needs the campaign's end (not every campaign type takes one).
 * - No objective field: the objective picks the channel type and the bidding strategy (below).
 * - Created PAUSED (a campaign with no ad groups serves nothing; the partner enables it).
 * - `containsEuPoliticalAdvertising` must be declared on create (required since 2025).
 * - (unconfirmed) Search campaigns may accept only a whole-day start (00:00:00); Google answers
 *   DATE_RANGE_ERROR_START_TIME_MUST_BE_THE_START_OF_A_DAY, passed back as a validation error.
 * - The dispatch's marker is a suffix of the campaign's name (campaign-marker.ts), within 255
 *   characters (unconfirmed: the limit Google's UI enforces). Google refuses a second campaign of
 *   the same name in an account that is not removed (DUPLICATE_CAMPAIGN_NAME), so the marker also
 *   makes a second create fail rather than succeed. A campaign is found again with GAQL through
 *   `googleAds:search`: `SELECT campaign.id, campaign.name FROM campaign WHERE campaign.name LIKE
 *   '%<dispatch id>%' AND campaign.status != 'REMOVED'` (Google keeps no creation time on a
 *   campaign: oldest first is by id, which Google hands out rising).
 * - The budget is made first and its name carries the marker too (`<name> budget · <dispatch id>`,
 *   the same every try). A later try whose budget create answers DUPLICATE_NAME reuses that budget,
 *   found by `SELECT campaign_budget.resource_name FROM campaign_budget WHERE campaign_budget.name
 *   = '<name>'`; a campaign create answered DUPLICATE_CAMPAIGN_NAME answers the campaign found.
 * - The dry run is one `googleAds:mutate` with `validateOnly: true`: the budget with the temporary
 *   resource name `customers/{id}/campaignBudgets/-1` and the campaign that refers to it, checked
 *   as if they were made; nothing is made.
 * - Revocation (DELETE /v1/connections/:id): `POST https://oauth2.googleapis.com/revoke` with
 *   `token=<refresh token>` (the whole grant; Google's OAuth 2.0 "Revoking a token").
 */
export const GOOGLE_ADS_API_VERSION = 'v23';
const SCOPES = ['https://www.googleapis.com/auth/adwords'];
/** (unconfirmed) the longest campaign or budget name Google takes. */
const MAX_NAME_LENGTH = 255;
/** Pages of a lookup at most (Google's pages hold 10,000 rows). */
const MAX_LOOKUP_PAGES = 10;

type Bidding = Record<string, Record<string, never>>;
const OBJECTIVES: Record<Exclude<Objective, 'app_installs'>, { channelType: 'SEARCH' | 'DISPLAY'; bidding: Bidding }> = {
  conversion: { channelType: 'SEARCH', bidding: { maximizeConversions: {} } },
  leads: { channelType: 'SEARCH', bidding: { maximizeConversions: {} } },
  traffic: { channelType: 'SEARCH', bidding: { targetSpend: {} } }, // "Maximize clicks"
  awareness: { channelType: 'DISPLAY', bidding: { manualCpm: {} } }, // (unconfirmed) viewable CPM on Display
  engagement: { channelType: 'DISPLAY', bidding: { targetSpend: {} } }, // (unconfirmed)
};

/** Error codes (the value inside `errorCode`) that mean the token cannot reach this customer. */
const UNREACHABLE_CODES = new Set(['USER_PERMISSION_DENIED', 'CUSTOMER_NOT_ENABLED', 'CUSTOMER_NOT_FOUND', 'INVALID_CUSTOMER_ID']); // CUSTOMER_NOT_FOUND, INVALID_CUSTOMER_ID (unconfirmed)
/** Error codes that mean the token is dead or lacks the scope: refresh, then re-authenticate. */
const AUTH_CODES = new Set([
  'ACCESS_TOKEN_SCOPE_INSUFFICIENT',
  'OAUTH_TOKEN_EXPIRED',
  'OAUTH_TOKEN_INVALID',
  'OAUTH_TOKEN_REVOKED',
  'OAUTH_TOKEN_DISABLED',
  'NOT_ADS_USER',
]);
const RATE_CODES = new Set(['RESOURCE_EXHAUSTED', 'RESOURCE_TEMPORARILY_EXHAUSTED']);

export class GoogleAds implements AdNetwork {
  readonly channel = 'google_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  /** Google's OAuth 2.0 for web server apps takes PKCE (S256). */
  readonly pkce = true;

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string; codeChallenge?: string }): string {
    return consentUrl(this.settings, {
      ...pkceChallenge(request.codeChallenge),
      client_id: requireClient(this.settings).clientId,
      redirect_uri: request.redirectUri,
      response_type: 'code',
      scope: SCOPES.join(' '),
      state: request.state,
      access_type: 'offline', // a refresh token
      prompt: 'consent', // a refresh token again on a second consent
      include_granted_scopes: 'true',
    });
  }

  exchangeCode(request: { code: string; redirectUri: string; codeVerifier?: string }): Promise<TokenSet> {
    return exchangeAuthorizationCode(this.http, this.settings, request.code, request.redirectUri, { codeVerifier: request.codeVerifier });
  }

  /** Google answers no new refresh token on refresh: the caller keeps the one on file. */
  refresh(refreshToken: string): Promise<TokenSet> {
    return refreshAccessToken(this.http, this.settings, refreshToken);
  }

  /** `POST https://oauth2.googleapis.com/revoke` (`token=`), beside the token endpoint: revoking the refresh token ends the grant. */
  revokeTokens(tokens: { accessToken: string; refreshToken: string | null }): Promise<void> {
    return revokeToken(this.http, this.settings, 'revoke', tokens, 'none');
  }

  /** Every Google Ads API call carries the developer token: without it no live launch can run. */
  launchUnavailableReason(): string | null {
    return this.settings.developerToken ? null : 'Google Ads needs a developer token on every call: CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN is not set';
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const ids = customerIds(access.providerAccountId);
    const answer = await this.call(access, ids, 'googleAds:search', { query: 'SELECT customer.id, customer.currency_code, customer.time_zone FROM customer' });
    const customer = (answer as { results?: Array<{ customer?: { currencyCode?: string; timeZone?: string } }> }).results?.[0]?.customer;
    if (!customer?.currencyCode || !customer.timeZone)
      throw new ProviderError('account_unreachable', `google_ads answered no customer ${ids.customerId}`, null);
    return { currency: customer.currencyCode, timezone: customer.timeZone };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const ids = customerIds(access.providerAccountId);
    const { budget, campaign } = campaignOf(access, request);
    const budgetResource = await this.budget(access, ids, budget);
    try {
      const created = await this.call(access, ids, 'campaigns:mutate', { operations: [{ create: { ...campaign, campaignBudget: budgetResource } }] });
      // customers/{customer_id}/campaigns/{campaign_id}
      return { providerResourceId: resourceNameOf(created, 'campaign').split('/').pop()! };
    } catch (error) {
      // The campaign exists already (an earlier try's, whose answer was lost): that one is the dispatch's.
      if (!(error instanceof ProviderError && error.providerCode === 'DUPLICATE_CAMPAIGN_NAME')) throw error;
      const [found] = await this.findCampaigns(access, request);
      if (!found) throw error;
      return { providerResourceId: found.providerResourceId, found: true };
    }
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const ids = customerIds(access.providerAccountId);
    const query = `SELECT campaign.id, campaign.name FROM campaign WHERE campaign.name LIKE ${gaqlString(`%${request.dispatchId}%`)} AND campaign.status != 'REMOVED'`;
    const rows = (await this.search(access, ids, query)) as Array<{ campaign?: { id?: string | number; name?: unknown } }>;
    return rows
      .filter((row) => row.campaign?.id !== undefined && carriesMarker(row.campaign.name, request.dispatchId))
      .map((row) => String(row.campaign!.id))
      .sort(byIdOrder)
      .map((providerResourceId) => ({ providerResourceId, createdAt: null }));
  }

  /** One googleAds:mutate with validateOnly: the budget (a temporary resource name) and its campaign, checked by Google, nothing made. */
  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    const ids = customerIds(access.providerAccountId);
    const { budget, campaign } = campaignOf(access, request);
    const temporary = `customers/${ids.customerId}/campaignBudgets/-1`;
    await this.call(access, ids, 'googleAds:mutate', {
      mutateOperations: [
        { campaignBudgetOperation: { create: { ...budget, resourceName: temporary } } },
        { campaignOperation: { create: { ...campaign, campaignBudget: temporary } } },
      ],
      validateOnly: true,
    });
    return { checkedBy: 'provider', warnings: [] };
  }

  /** The dispatch's budget: made, or (made by an earlier try: DUPLICATE_NAME) found by its name. */
  private async budget(access: LiveAccess, ids: CustomerIds, budget: Record<string, unknown>): Promise<string> {
    try {
      return resourceNameOf(await this.call(access, ids, 'campaignBudgets:mutate', { operations: [{ create: budget }] }), 'campaign budget');
    } catch (error) {
      if (!(error instanceof ProviderError && error.providerCode === 'DUPLICATE_NAME')) throw error;
      const query = `SELECT campaign_budget.resource_name, campaign_budget.name FROM campaign_budget WHERE campaign_budget.name = ${gaqlString(String(budget.name))} AND campaign_budget.status != 'REMOVED'`;
      const [row] = (await this.search(access, ids, query)) as Array<{ campaignBudget?: { resourceName?: string } }>;
      if (!row?.campaignBudget?.resourceName) throw error;
      return row.campaignBudget.resourceName;
    }
  }

  /** googleAds:search, every page (bounded): the rows. */
  private async search(access: AccountAccess, ids: CustomerIds, query: string): Promise<unknown[]> {
    const rows: unknown[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
      const answer = (await this.call(access, ids, 'googleAds:search', { query, ...(pageToken ? { pageToken } : {}) })) as {
        results?: unknown[];
        nextPageToken?: string;
      };
      rows.push(...(answer?.results ?? []));
      pageToken = answer?.nextPageToken;
      if (!pageToken) break;
    }
    return rows;
  }

  private async call(access: AccountAccess, ids: CustomerIds, method: string, body: unknown): Promise<unknown> {
    const answer = await this.http.call({
      method: 'POST',
      url: `${this.settings.apiUrl}/${GOOGLE_ADS_API_VERSION}/customers/${ids.customerId}/${method}`,
      headers: {
        authorization: `Bearer ${access.accessToken}`,
        'developer-token': this.settings.developerToken ?? undefined,
        'login-customer-id': ids.loginCustomerId,
      },
      json: body,
    });
    if (answer.status >= 200 && answer.status < 300) return answer.json;
    throw googleAdsError(answer);
  }
}

interface CustomerIds {
  customerId: string;
  loginCustomerId?: string;
}

function customerIds(providerAccountId: string): CustomerIds {
  const parts = providerAccountId.split('/').map((part) => part.replace(/-/g, '').trim());
  if (parts.length > 2 || parts.some((part) => !/^\d{10}$/.test(part)))
    throw new ProviderError(
      'account_unreachable',
      `google_ads customer ids are 10 digits ("123-456-7890", or "<manager>/<customer>"), not "${providerAccountId}"`,
      'INVALID_CUSTOMER_ID',
    );
  return parts.length === 2 ? { loginCustomerId: parts[0], customerId: parts[1] } : { customerId: parts[0] };
}

/**
 * The budget and the campaign as Google takes them (the campaign without its budget's resource
 * name); every rule Google would refuse before a call throws here (the dry run's too).
 */
function campaignOf(access: LiveAccess, request: LiveCampaignRequest): { budget: Record<string, unknown>; campaign: Record<string, unknown> } {
  const { campaign } = request;
  const objective = objectiveOf(campaign);
  if (objective === 'app_installs')
    throw unsupportedObjective('google_ads', objective, 'an app campaign needs an app id and store, which a unified campaign does not carry');
  const end = lifetimeEnd('google_ads', campaign);
  const mapped = OBJECTIVES[objective];
  return {
    budget: budgetOf(campaign, request.dispatchId),
    campaign: {
      name: markedName(campaign.name, request.dispatchId, MAX_NAME_LENGTH),
      status: 'PAUSED',
      advertisingChannelType: mapped.channelType,
      ...mapped.bidding,
      ...(mapped.channelType === 'SEARCH' ? { networkSettings: { targetGoogleSearch: true, targetSearchNetwork: true, targetContentNetwork: false } } : {}),
      startDateTime: localDateTime(campaign.schedule.start_at, access.account.timezone),
      ...(end ? { endDateTime: localDateTime(end, access.account.timezone) } : {}),
      containsEuPoliticalAdvertising: 'DOES_NOT_CONTAIN_EU_POLITICAL_ADVERTISING',
    },
  };
}

function budgetOf(campaign: CampaignSpec, dispatchId: string): Record<string, unknown> {
  const micros = String(toMicros(campaign.budget.amount_micros)); // int64 travels as a string in proto3 JSON
  // Budget names are unique per account: the dispatch's marker makes it the dispatch's, the same on every try (a later try finds it).
  const name = markedName(`${campaign.name} budget`, dispatchId, MAX_NAME_LENGTH);
  const common = { name, deliveryMethod: 'STANDARD', explicitlyShared: false };
  return campaign.budget.type === 'daily'
    ? { ...common, period: 'DAILY', amountMicros: micros }
    : { ...common, period: 'CUSTOM_PERIOD', totalAmountMicros: micros };
}

/** A GAQL string literal: single-quoted, backslashes and quotes escaped. */
function gaqlString(value: string): string {
  return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

function resourceNameOf(answer: unknown, what: string): string {
  const name = (answer as { results?: Array<{ resourceName?: string }> })?.results?.[0]?.resourceName;
  if (!name) throw new ProviderError('transient', `google_ads answered no resourceName for the ${what}`, null);
  return name;
}

interface GoogleAdsErrorBody {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    details?: Array<{
      '@type'?: string;
      reason?: string;
      retryDelay?: string;
      errors?: Array<{ errorCode?: Record<string, string>; message?: string; details?: { quotaErrorDetails?: { retryDelay?: string } } }>;
    }>;
  };
}

/** Google's error envelope: `error.status` and each `errors[].errorCode` say what happened. */
export function googleAdsError(answer: NetworkAnswer): ProviderError {
  const error = (answer.json as GoogleAdsErrorBody | undefined)?.error;
  const details = error?.details ?? [];
  const failures = details.flatMap((detail) => detail.errors ?? []);
  const codes = [
    ...failures.flatMap((failure) => Object.values(failure.errorCode ?? {})),
    ...details.map((detail) => detail.reason).filter((r): r is string => !!r),
  ];
  const providerCode = codes[0] ?? error?.status ?? null;
  const message = `google_ads: ${failures[0]?.message ?? error?.message ?? `HTTP ${answer.status}`}`;
  const status = answer.status;

  // The service's own developer token, not the partner's grant: re-authenticating would not help.
  if (codes.some((code) => code.startsWith('DEVELOPER_TOKEN_'))) return new ProviderError('validation', message, providerCode, status);
  if (status === 401 || error?.status === 'UNAUTHENTICATED' || codes.some((code) => AUTH_CODES.has(code)))
    return new ProviderError('auth', message, providerCode ?? 'UNAUTHENTICATED', status);
  if (status === 429 || error?.status === 'RESOURCE_EXHAUSTED' || codes.some((code) => RATE_CODES.has(code))) {
    const delay = [...failures.map((failure) => failure.details?.quotaErrorDetails?.retryDelay), ...details.map((detail) => detail.retryDelay)].find(Boolean);
    return new ProviderError('rate_limited', message, providerCode ?? 'RESOURCE_EXHAUSTED', status, delay ? durationMs(delay) : answer.retryAfterMs);
  }
  if (codes.some((code) => UNREACHABLE_CODES.has(code))) return new ProviderError('account_unreachable', message, providerCode, status);
  if (status >= 500) return new ProviderError('transient', message, providerCode, status, answer.retryAfterMs);
  return new ProviderError('validation', message, providerCode, status);
}

/** A protobuf Duration in JSON: "30s", "1.5s". */
function durationMs(duration: string): number | null {
  const match = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(duration);
  if (!match) return null;
  return Number(match[1]) * 1000 + Math.round(Number(`0.${match[2] ?? '0'}`) * 1000);
}
