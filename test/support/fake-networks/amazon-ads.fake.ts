import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

/**
 * Amazon Ads API, as the adapter meets it: Login with Amazon on `/ap/oa` and `/auth/o2/token`
 * (RFC 6749, client in the body), `GET /v2/profiles` (the profiles the token reaches: profile id,
 * country, currency, IANA time zone, `accountInfo.id`), and the unified v1
 * `POST /adsApi/v1/create/campaigns`, which needs the Bearer token, the LwA client id header and
 * `Amazon-Advertising-API-Scope` naming a profile of the token, and answers 207
 * `{success: [{index, campaign}], error: [{index, errors: [{code, message, fieldLocation}]}]}`.
 * A Sponsored Products campaign is checked as Amazon's schema reads (no unknown fields, one DAILY
 * MONETARY budget, SINGLE_MARKETPLACE in the profile's marketplace, state ENABLED or PAUSED, ISO
 * 8601 times), the budget's decimals against the currency, and a minimum daily budget of 1 USD
 * or 100 JPY (Amazon's Sponsored Products minimums; other currencies: any positive amount).
 * The error codes are Amazon's v1 codes; HTTP-level errors are `{code, message}`.
 *
 * `POST /adsApi/v1/query/campaigns` (the same headers as the create) answers 200 `{campaigns,
 * nextToken?}` for the profile's account, checked as Amazon's schema reads: `adProductFilter`
 * required, the known filters only (`campaignIdFilter`, `nameFilter` {include: 1..100,
 * queryTermMatchType BROAD_MATCH or EXACT_MATCH}, `stateFilter`, `portfolioIdFilter`,
 * `marketplaceScopeFilter`), `maxResults` 1 to 5000, `nextToken` only one it gave. A broad match
 * here is a case-insensitive "contains" (Amazon's exact semantics are unconfirmed).
 */
const CAMPAIGN_FIELDS = [
  'adProduct',
  'autoCreationSettings',
  'budgets',
  'countries',
  'endDateTime',
  'marketplaceScope',
  'marketplaces',
  'name',
  'optimizations',
  'portfolioId',
  'siteRestrictions',
  'startDateTime',
  'state',
  'tags',
];
/** The marketplace (Amazon's profile country code) and decimals of each currency a profile may bill in. */
const MARKETS: Record<string, { country: string; decimals: number; minimum?: number }> = {
  USD: { country: 'US', decimals: 2, minimum: 1 },
  CAD: { country: 'CA', decimals: 2 },
  MXN: { country: 'MX', decimals: 2 },
  BRL: { country: 'BR', decimals: 2 },
  GBP: { country: 'UK', decimals: 2 },
  EUR: { country: 'DE', decimals: 2 },
  SEK: { country: 'SE', decimals: 2 },
  PLN: { country: 'PL', decimals: 2 },
  TRY: { country: 'TR', decimals: 2 },
  AED: { country: 'AE', decimals: 2 },
  SAR: { country: 'SA', decimals: 2 },
  INR: { country: 'IN', decimals: 2 },
  JPY: { country: 'JP', decimals: 0, minimum: 100 },
  AUD: { country: 'AU', decimals: 2 },
  SGD: { country: 'SG', decimals: 2 },
};
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
const QUERY_FIELDS = [
  'adProductFilter',
  'campaignIdFilter',
  'marketplaceScopeFilter',
  'maxResults',
  'nameFilter',
  'nextToken',
  'portfolioIdFilter',
  'stateFilter',
];
const STATES = ['ENABLED', 'PAUSED', 'ARCHIVED'];

interface StoredCampaign {
  campaignId: string;
  accountId: string;
  body: Record<string, unknown>;
  creationDateTime: string;
}

export class AmazonAdsFake extends FakeNetwork {
  readonly channel = 'amazon_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: '/ap/oa', tokenPath: '/auth/o2/token', accessTokenSeconds: 3600, issuesRefreshTokens: true };
  private readonly profileIds = new Map<string, number>();
  private nextProfileId = 3_184_910_512_876_540;
  private readonly campaigns: StoredCampaign[] = [];
  private readonly nextTokens = new Map<string, number>();
  private readonly queryFaults: number[] = [];

  /** The profile id Amazon gives this advertiser account. */
  profileIdOf(accountId: string): number {
    if (!this.profileIds.has(accountId)) this.profileIds.set(accountId, this.nextProfileId++);
    return this.profileIds.get(accountId)!;
  }

  protected route(req: RecordedRequest): FakeAnswer {
    if (req.path === '/v2/profiles' && req.method === 'GET') return this.profiles(req);
    if (req.path === '/adsApi/v1/create/campaigns' && req.method === 'POST') return this.createCampaigns(req);
    if (req.path === '/adsApi/v1/query/campaigns' && req.method === 'POST') return this.queryCampaigns(req);
    return this.error(404, 'NOT_FOUND', `Could not find resource for full path: ${req.path}`);
  }

  private clientProblem(req: RecordedRequest): FakeAnswer | null {
    const refused = this.checkToken(req, this.bearer(req));
    if (refused) return refused;
    const client = req.headers['amazon-advertising-api-clientid'] ?? req.headers['amazon-ads-clientid'];
    if (client !== this.clientId) return this.error(400, 'BAD_REQUEST', 'Amazon-Advertising-API-ClientId is missing or does not match the token');
    return null;
  }

  private visibleProfiles(token: string | undefined): Array<Record<string, unknown>> {
    return [...this.accounts.values()]
      .filter((account) => this.reachableAccount(account.id, token))
      .map((account) => ({
        profileId: this.profileIdOf(account.id),
        countryCode: MARKETS[account.currency]?.country ?? 'US',
        currencyCode: account.currency,
        dailyBudget: 999_999_999,
        timezone: account.timezone,
        accountInfo: { marketplaceStringId: 'ATVPDKIKX0DER', id: account.id, type: 'seller', name: `Seller ${account.id}`, validPaymentMethod: true },
      }));
  }

  private profiles(req: RecordedRequest): FakeAnswer {
    return this.clientProblem(req) ?? { status: 200, json: this.visibleProfiles(this.bearer(req)) };
  }

  /** The profile of a profile-scoped call (`Amazon-Advertising-API-Scope`), or Amazon's refusal. */
  private scopedProfile(req: RecordedRequest): FakeAnswer | { profile: Record<string, unknown>; accountId: string } {
    const problem = this.clientProblem(req);
    if (problem) return problem;
    const profile = this.visibleProfiles(this.bearer(req)).find((p) => String(p.profileId) === req.headers['amazon-advertising-api-scope']);
    if (!profile) return this.error(403, 'FORBIDDEN', 'Amazon-Advertising-API-Scope is not a profile this token may use');
    const accountInfo = profile.accountInfo as { id: string };
    const accountHeader = req.headers['amazon-ads-accountid'];
    if (accountHeader !== undefined && accountHeader !== accountInfo.id) return this.error(403, 'FORBIDDEN', 'Amazon-Ads-AccountId does not match the profile');
    if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
      return this.error(415, 'UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    return { profile, accountId: accountInfo.id };
  }

  private createCampaigns(req: RecordedRequest): FakeAnswer {
    const scoped = this.scopedProfile(req);
    if ('status' in scoped) return scoped;
    const { profile } = scoped;
    const accountInfo = { id: scoped.accountId };
    const body = req.body as { campaigns?: unknown } | undefined;
    if (!body || !Array.isArray(body.campaigns) || body.campaigns.length < 1 || body.campaigns.length > 1000 || Object.keys(body).length !== 1)
      return this.error(400, 'BAD_REQUEST', 'The body must be {"campaigns": [1..1000 campaigns]}');
    const success: unknown[] = [];
    const error: unknown[] = [];
    body.campaigns.forEach((campaign: Record<string, unknown>, index: number) => {
      const refusal = this.campaignProblem(campaign, profile);
      if (refusal) return error.push({ index, errors: [refusal] });
      const stored = {
        campaignId: this.remember('campaign', accountInfo.id, campaign),
        accountId: accountInfo.id,
        body: campaign,
        creationDateTime: new Date().toISOString(),
      };
      this.campaigns.push(stored);
      success.push({ index, campaign: this.campaignView(stored) });
    });
    return { status: 207, json: { success, error } };
  }

  /** Campaigns made elsewhere (the console, another tool), as many as a test needs, without a call each. */
  plantCampaigns(accountId: string, names: string[], state = 'ENABLED'): void {
    for (const name of names)
      this.campaigns.push({
        campaignId: this.remember('planted_campaign', accountId, { name }),
        accountId,
        body: { adProduct: 'SPONSORED_PRODUCTS', name, state },
        creationDateTime: new Date().toISOString(),
      });
  }

  /** The next campaign query (only: the profile read before it is answered) fails with this status. */
  failNextCampaignQuery(status: number): void {
    this.queryFaults.push(status);
  }

  private queryCampaigns(req: RecordedRequest): FakeAnswer {
    const fault = this.queryFaults.shift();
    if (fault !== undefined) return this.serverErrorAnswer(req, fault);
    const scoped = this.scopedProfile(req);
    if ('status' in scoped) return scoped;
    const body = req.body as Record<string, any> | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return this.error(400, 'BAD_REQUEST', 'The body must be a query object');
    const unknown = Object.keys(body).find((field) => !QUERY_FIELDS.includes(field));
    if (unknown) return this.error(400, 'BAD_REQUEST', `Unrecognized field: ${unknown}`);
    const include = (filter: unknown, max: number): string[] | null | undefined => {
      if (filter === undefined) return undefined;
      const values = (filter as { include?: unknown })?.include;
      return Array.isArray(values) && values.length >= 1 && values.length <= max && values.every((v) => typeof v === 'string') ? (values as string[]) : null;
    };
    const products = include(body.adProductFilter, 1);
    if (!products || products[0] !== 'SPONSORED_PRODUCTS') return this.error(400, 'BAD_REQUEST', 'adProductFilter.include must be [SPONSORED_PRODUCTS]');
    const states = include(body.stateFilter, 3);
    if (states === null || states?.some((state) => !STATES.includes(state)))
      return this.error(400, 'BAD_REQUEST', `stateFilter.include must hold ${STATES.join(', ')}`);
    const ids = include(body.campaignIdFilter, 1000);
    if (ids === null) return this.error(400, 'BAD_REQUEST', 'campaignIdFilter.include must hold 1 to 1000 ids');
    const names = include(body.nameFilter, 100);
    const matchType = body.nameFilter?.queryTermMatchType;
    if (names === null || (names && matchType !== 'BROAD_MATCH' && matchType !== 'EXACT_MATCH'))
      return this.error(400, 'BAD_REQUEST', 'nameFilter needs include (1 to 100 terms) and queryTermMatchType BROAD_MATCH or EXACT_MATCH');
    const maxResults = body.maxResults ?? 5000;
    if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 5000) return this.error(400, 'BAD_REQUEST', 'maxResults must be between 1 and 5000');
    let start = 0;
    if (body.nextToken !== undefined) {
      const known = this.nextTokens.get(String(body.nextToken));
      if (known === undefined) return this.error(400, 'BAD_REQUEST', 'nextToken is not valid');
      start = known;
    }
    const named = (name: string) =>
      !names || names.some((term) => (matchType === 'EXACT_MATCH' ? name === term : name.toLowerCase().includes(term.toLowerCase())));
    const matching = this.campaigns.filter(
      (campaign) =>
        campaign.accountId === scoped.accountId &&
        (!states || states.includes(String(campaign.body.state))) &&
        (!ids || ids.includes(campaign.campaignId)) &&
        named(String(campaign.body.name)),
    );
    const page = matching.slice(start, start + maxResults);
    const answer: { campaigns: unknown[]; nextToken?: string } = { campaigns: page.map((campaign) => this.campaignView(campaign)) };
    if (start + page.length < matching.length) {
      answer.nextToken = Buffer.from(`${start + page.length}:${Math.random()}`).toString('base64url');
      this.nextTokens.set(answer.nextToken, start + page.length);
    }
    return { status: 200, json: answer };
  }

  private campaignView(campaign: StoredCampaign): Record<string, unknown> {
    return {
      ...campaign.body,
      campaignId: campaign.campaignId,
      creationDateTime: campaign.creationDateTime,
      lastUpdatedDateTime: campaign.creationDateTime,
      status: { deliveryStatus: 'NOT_DELIVERING' },
    };
  }

  private campaignProblem(
    campaign: Record<string, unknown>,
    profile: Record<string, unknown>,
  ): { code: string; message: string; fieldLocation?: string } | null {
    const invalid = (code: string, message: string, fieldLocation?: string) => ({ code, message, ...(fieldLocation ? { fieldLocation } : {}) });
    if (!campaign || typeof campaign !== 'object') return invalid('BAD_REQUEST', 'A campaign must be an object');
    const unknown = Object.keys(campaign).find((field) => !CAMPAIGN_FIELDS.includes(field));
    if (unknown) return invalid('BAD_REQUEST', `Unrecognized field: ${unknown}`, `$.campaigns[0].${unknown}`);
    if (campaign.adProduct !== 'SPONSORED_PRODUCTS') return invalid('FIELD_VALUE_IS_INVALID', 'adProduct must be SPONSORED_PRODUCTS', 'adProduct');
    if (typeof (campaign.autoCreationSettings as { autoCreateTargets?: unknown } | undefined)?.autoCreateTargets !== 'boolean')
      return invalid('FIELD_VALUE_IS_NULL', 'autoCreationSettings.autoCreateTargets is required', 'autoCreationSettings');
    if (typeof campaign.name !== 'string' || !campaign.name) return invalid('FIELD_VALUE_IS_EMPTY', 'name is required', 'name');
    if (campaign.state !== 'ENABLED' && campaign.state !== 'PAUSED') return invalid('FIELD_VALUE_IS_INVALID', 'state must be ENABLED or PAUSED', 'state');
    if (campaign.marketplaceScope !== 'SINGLE_MARKETPLACE')
      return invalid('FIELD_VALUE_IS_INVALID', 'marketplaceScope must be SINGLE_MARKETPLACE', 'marketplaceScope');
    const marketplace = profile.countryCode === 'UK' ? 'GB' : profile.countryCode;
    if (!Array.isArray(campaign.marketplaces) || campaign.marketplaces.length !== 1 || campaign.marketplaces[0] !== marketplace)
      return invalid('UNSUPPORTED_MARKETPLACE', `marketplaces must be [${marketplace}], the marketplace of this profile`, 'marketplaces');
    for (const field of ['startDateTime', 'endDateTime'] as const)
      if (campaign[field] !== undefined && (typeof campaign[field] !== 'string' || !ISO_UTC.test(campaign[field] as string)))
        return invalid('FIELD_VALUE_IS_INVALID', `${field} must be an ISO 8601 date-time in UTC`, field);
    if (campaign.startDateTime === undefined) return invalid('DATE_CANNOT_BE_NULL', 'startDateTime is required', 'startDateTime');
    if (campaign.endDateTime !== undefined && Date.parse(campaign.endDateTime as string) <= Date.parse(campaign.startDateTime as string))
      return invalid('FIELD_VALUE_IS_INVALID', 'endDateTime must be after startDateTime', 'endDateTime');
    const budgets = campaign.budgets as Array<Record<string, any>> | undefined;
    if (!Array.isArray(budgets) || budgets.length !== 1) return invalid('FIELD_SIZE_IS_OUT_OF_RANGE', 'budgets must hold exactly one budget', 'budgets');
    const [budget] = budgets;
    if (budget.budgetType !== 'MONETARY' || budget.recurrenceTimePeriod !== 'DAILY')
      return invalid('FIELD_VALUE_IS_INVALID', 'Sponsored Products budgets are MONETARY with recurrenceTimePeriod DAILY', 'budgets[0]');
    const value = budget.budgetValue?.monetaryBudgetValue?.monetaryBudget?.value;
    const market = MARKETS[String(profile.currencyCode)];
    if (typeof value !== 'number' || !(value > 0))
      return invalid('FIELD_VALUE_IS_INVALID', 'monetaryBudget.value must be a positive number', 'budgets[0].budgetValue');
    if (market && Math.round(value * 10 ** market.decimals) !== value * 10 ** market.decimals)
      return invalid(
        'FIELD_VALUE_IS_INVALID',
        `the budget has more than ${market.decimals} decimals for ${String(profile.currencyCode)}`,
        'budgets[0].budgetValue',
      );
    if (market?.minimum !== undefined && value < market.minimum)
      return invalid(
        'FIELD_VALUE_IS_BELOW_MINIMUM_LIMIT',
        `The daily budget must be at least ${market.minimum} ${String(profile.currencyCode)}`,
        'budgets[0].budgetValue',
      );
    return null;
  }

  private error(status: number, code: string, message: string): FakeAnswer {
    return { status, json: { code, message } };
  }

  protected tokenRefusedAnswer(): FakeAnswer {
    return this.error(401, 'UNAUTHORIZED', 'The request lacks the necessary credentials');
  }

  protected rateLimitedAnswer(_req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    return {
      ...this.error(429, 'TOO_MANY_REQUESTS', 'There have been too many requests, please slow down your call rate'),
      headers: { 'retry-after': String(retryAfterSeconds) },
    };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return this.error(status, 'INTERNAL_ERROR', 'The server encountered an unexpected condition');
  }
}
