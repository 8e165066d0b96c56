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
 */
const CAMPAIGN_FIELDS = ['adProduct', 'autoCreationSettings', 'budgets', 'countries', 'endDateTime', 'marketplaceScope', 'marketplaces', 'name', 'optimizations', 'portfolioId', 'siteRestrictions', 'startDateTime', 'state', 'tags'];
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

export class AmazonAdsFake extends FakeNetwork {
  readonly channel = 'amazon_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: '/ap/oa', tokenPath: '/auth/o2/token', accessTokenSeconds: 3600, issuesRefreshTokens: true };
  private readonly profileIds = new Map<string, number>();
  private nextProfileId = 3_184_910_512_876_540;

  /** The profile id Amazon gives this advertiser account. */
  profileIdOf(accountId: string): number {
    if (!this.profileIds.has(accountId)) this.profileIds.set(accountId, this.nextProfileId++);
    return this.profileIds.get(accountId)!;
  }

  protected route(req: RecordedRequest): FakeAnswer {
    if (req.path === '/v2/profiles' && req.method === 'GET') return this.profiles(req);
    if (req.path === '/adsApi/v1/create/campaigns' && req.method === 'POST') return this.createCampaigns(req);
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

  private createCampaigns(req: RecordedRequest): FakeAnswer {
    const problem = this.clientProblem(req);
    if (problem) return problem;
    const profile = this.visibleProfiles(this.bearer(req)).find((p) => String(p.profileId) === req.headers['amazon-advertising-api-scope']);
    if (!profile) return this.error(403, 'FORBIDDEN', 'Amazon-Advertising-API-Scope is not a profile this token may use');
    const accountInfo = profile.accountInfo as { id: string };
    const accountHeader = req.headers['amazon-ads-accountid'];
    if (accountHeader !== undefined && accountHeader !== accountInfo.id) return this.error(403, 'FORBIDDEN', 'Amazon-Ads-AccountId does not match the profile');
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return this.error(415, 'UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    const body = req.body as { campaigns?: unknown } | undefined;
    if (!body || !Array.isArray(body.campaigns) || body.campaigns.length < 1 || body.campaigns.length > 1000 || Object.keys(body).length !== 1)
      return this.error(400, 'BAD_REQUEST', 'The body must be {"campaigns": [1..1000 campaigns]}');
    const success: unknown[] = [];
    const error: unknown[] = [];
    body.campaigns.forEach((campaign: Record<string, unknown>, index: number) => {
      const refusal = this.campaignProblem(campaign, profile);
      if (refusal) return error.push({ index, errors: [refusal] });
      const campaignId = this.remember('campaign', accountInfo.id, campaign);
      const now = new Date().toISOString();
      success.push({ index, campaign: { ...campaign, campaignId, creationDateTime: now, lastUpdatedDateTime: now, status: { deliveryStatus: 'NOT_DELIVERING' } } });
    });
    return { status: 207, json: { success, error } };
  }

  private campaignProblem(campaign: Record<string, unknown>, profile: Record<string, unknown>): { code: string; message: string; fieldLocation?: string } | null {
    const invalid = (code: string, message: string, fieldLocation?: string) => ({ code, message, ...(fieldLocation ? { fieldLocation } : {}) });
    if (!campaign || typeof campaign !== 'object') return invalid('BAD_REQUEST', 'A campaign must be an object');
    const unknown = Object.keys(campaign).find((field) => !CAMPAIGN_FIELDS.includes(field));
    if (unknown) return invalid('BAD_REQUEST', `Unrecognized field: ${unknown}`, `$.campaigns[0].${unknown}`);
    if (campaign.adProduct !== 'SPONSORED_PRODUCTS') return invalid('FIELD_VALUE_IS_INVALID', 'adProduct must be SPONSORED_PRODUCTS', 'adProduct');
    if (typeof (campaign.autoCreationSettings as { autoCreateTargets?: unknown } | undefined)?.autoCreateTargets !== 'boolean') return invalid('FIELD_VALUE_IS_NULL', 'autoCreationSettings.autoCreateTargets is required', 'autoCreationSettings');
    if (typeof campaign.name !== 'string' || !campaign.name) return invalid('FIELD_VALUE_IS_EMPTY', 'name is required', 'name');
    if (campaign.state !== 'ENABLED' && campaign.state !== 'PAUSED') return invalid('FIELD_VALUE_IS_INVALID', 'state must be ENABLED or PAUSED', 'state');
    if (campaign.marketplaceScope !== 'SINGLE_MARKETPLACE') return invalid('FIELD_VALUE_IS_INVALID', 'marketplaceScope must be SINGLE_MARKETPLACE', 'marketplaceScope');
    const marketplace = profile.countryCode === 'UK' ? 'GB' : profile.countryCode;
    if (!Array.isArray(campaign.marketplaces) || campaign.marketplaces.length !== 1 || campaign.marketplaces[0] !== marketplace)
      return invalid('UNSUPPORTED_MARKETPLACE', `marketplaces must be [${marketplace}], the marketplace of this profile`, 'marketplaces');
    for (const field of ['startDateTime', 'endDateTime'] as const)
      if (campaign[field] !== undefined && (typeof campaign[field] !== 'string' || !ISO_UTC.test(campaign[field] as string))) return invalid('FIELD_VALUE_IS_INVALID', `${field} must be an ISO 8601 date-time in UTC`, field);
    if (campaign.startDateTime === undefined) return invalid('DATE_CANNOT_BE_NULL', 'startDateTime is required', 'startDateTime');
    if (campaign.endDateTime !== undefined && Date.parse(campaign.endDateTime as string) <= Date.parse(campaign.startDateTime as string)) return invalid('FIELD_VALUE_IS_INVALID', 'endDateTime must be after startDateTime', 'endDateTime');
    const budgets = campaign.budgets as Array<Record<string, any>> | undefined;
    if (!Array.isArray(budgets) || budgets.length !== 1) return invalid('FIELD_SIZE_IS_OUT_OF_RANGE', 'budgets must hold exactly one budget', 'budgets');
    const [budget] = budgets;
    if (budget.budgetType !== 'MONETARY' || budget.recurrenceTimePeriod !== 'DAILY') return invalid('FIELD_VALUE_IS_INVALID', 'Sponsored Products budgets are MONETARY with recurrenceTimePeriod DAILY', 'budgets[0]');
    const value = budget.budgetValue?.monetaryBudgetValue?.monetaryBudget?.value;
    const market = MARKETS[String(profile.currencyCode)];
    if (typeof value !== 'number' || !(value > 0)) return invalid('FIELD_VALUE_IS_INVALID', 'monetaryBudget.value must be a positive number', 'budgets[0].budgetValue');
    if (market && Math.round(value * 10 ** market.decimals) !== value * 10 ** market.decimals) return invalid('FIELD_VALUE_IS_INVALID', `the budget has more than ${market.decimals} decimals for ${String(profile.currencyCode)}`, 'budgets[0].budgetValue');
    if (market?.minimum !== undefined && value < market.minimum) return invalid('FIELD_VALUE_IS_BELOW_MINIMUM_LIMIT', `The daily budget must be at least ${market.minimum} ${String(profile.currencyCode)}`, 'budgets[0].budgetValue');
    return null;
  }

  private error(status: number, code: string, message: string): FakeAnswer {
    return { status, json: { code, message } };
  }

  protected tokenRefusedAnswer(): FakeAnswer {
    return this.error(401, 'UNAUTHORIZED', 'The request lacks the necessary credentials');
  }

  protected rateLimitedAnswer(_req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    return { ...this.error(429, 'TOO_MANY_REQUESTS', 'There have been too many requests, please slow down your call rate'), headers: { 'retry-after': String(retryAfterSeconds) } };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return this.error(status, 'INTERNAL_ERROR', 'The server encountered an unexpected condition');
  }
}
