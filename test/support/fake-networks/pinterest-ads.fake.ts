import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

/**
 * Pinterest API v5, as the adapter meets it: `/v5/ad_accounts/{id}` and
 * `/v5/ad_accounts/{id}/campaigns` (an array body, answered `{items: [{data, exceptions}]}`),
 * Bearer tokens, errors `{code, message}`, and the token endpoint at `/v5/oauth/token` that takes
 * the client only as HTTP Basic and answers refresh tokens with their own lifetimes. A campaign is
 * checked the way Pinterest does: required fields, enums, micro-currency integers, Unix seconds,
 * never both spend caps; in USD a daily cap under 5 USD is refused (CHANNELS.md's minimum,
 * unconfirmed). "Authentication failed." (code 2) and "AdAccount not found." are Pinterest's own
 * answers; the other codes are stand-ins in its shape.
 *
 * `GET /v5/ad_accounts/{id}/campaigns` lists the account's campaigns as v5 does:
 * `{items: [CampaignResponse...], bookmark}`, `page_size` 1 to 250 (default 25), `order`
 * ASCENDING or DESCENDING by id, `entity_statuses` (default ACTIVE and PAUSED; the fake reads one
 * value, as its recorded query keeps one per name), `campaign_ids`, and `bookmark` (only one it
 * gave). A parameter out of range is Pinterest's 400 "Invalid ad account campaign parameters.".
 */
const OBJECTIVES = ['AWARENESS', 'CONSIDERATION', 'WEB_CONVERSION', 'CATALOG_SALES', 'VIDEO_COMPLETION', 'SALES', 'LEADS'];
const STATUSES = ['ACTIVE', 'PAUSED', 'ARCHIVED', 'DRAFT', 'DELETED_DRAFT'];
const FIELDS = [
  'ad_account_id',
  'name',
  'status',
  'objective_type',
  'daily_spend_cap',
  'lifetime_spend_cap',
  'start_time',
  'end_time',
  'order_line_id',
  'tracking_urls',
  'is_campaign_budget_optimization',
  'is_flexible_daily_budgets',
  'is_performance_plus',
  'is_automated_campaign',
  'bid_options',
  'default_ad_group_budget_in_micro_currency',
];
const CURRENCIES = [
  'USD',
  'GBP',
  'CAD',
  'EUR',
  'AUD',
  'NZD',
  'SEK',
  'ILS',
  'CHF',
  'HKD',
  'JPY',
  'SGD',
  'KRW',
  'NOK',
  'DKK',
  'PLN',
  'RON',
  'HUF',
  'CZK',
  'BRL',
  'MXN',
  'ARS',
  'CLP',
  'COP',
  'INR',
  'TRY',
];
const USD_DAILY_MINIMUM_MICROS = 5_000_000;
const LIST_PARAMS = ['campaign_ids', 'entity_statuses', 'page_size', 'order', 'bookmark'];

interface StoredCampaign {
  id: string;
  accountId: string;
  body: Record<string, unknown>;
  createdTime: number;
}

export class PinterestAdsFake extends FakeNetwork {
  readonly channel = 'pinterest_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: '/oauth/', tokenPath: '/v5/oauth/token', accessTokenSeconds: 2_592_000, issuesRefreshTokens: true };
  private readonly campaigns: StoredCampaign[] = [];
  private readonly bookmarks = new Map<string, number>();

  protected route(req: RecordedRequest): FakeAnswer {
    const account = /^\/v5\/ad_accounts\/([^/]+)$/.exec(req.path);
    if (account && req.method === 'GET') return this.readAccount(req, decodeURIComponent(account[1]));
    const campaigns = /^\/v5\/ad_accounts\/([^/]+)\/campaigns$/.exec(req.path);
    if (campaigns && req.method === 'POST') return this.createCampaigns(req, decodeURIComponent(campaigns[1]));
    if (campaigns && req.method === 'GET') return this.listCampaigns(req, decodeURIComponent(campaigns[1]));
    return { status: 404, json: { code: 404, message: `Not found: ${req.method} ${req.path}` } };
  }

  private gate(req: RecordedRequest, id: string): FakeAnswer | { currency: string } {
    const refused = this.checkToken(req, this.bearer(req));
    if (refused) return refused;
    if (!this.accounts.has(id)) return { status: 404, json: { code: 2, message: 'AdAccount not found.' } };
    const account = this.reachableAccount(id, this.bearer(req));
    if (!account) return { status: 403, json: { code: 29, message: 'You are not permitted to access that resource.' } };
    return account;
  }

  private readAccount(req: RecordedRequest, id: string): FakeAnswer {
    const account = this.gate(req, id);
    if ('status' in account) return account;
    return {
      status: 200,
      json: {
        id,
        name: `Ads ${id}`,
        owner: { username: 'acme' },
        country: 'US',
        currency: account.currency,
        permissions: ['OWNER'],
        created_time: 1_700_000_000,
        updated_time: 1_700_000_000,
      },
    };
  }

  private createCampaigns(req: RecordedRequest, id: string): FakeAnswer {
    const account = this.gate(req, id);
    if ('status' in account) return account;
    if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
      return { status: 415, json: { code: 1, message: 'Content-Type must be application/json' } };
    if (!Array.isArray(req.body) || req.body.length < 1 || req.body.length > 30)
      return { status: 400, json: { code: 1, message: 'Invalid request body: expected an array of 1 to 30 campaigns' } };
    const items = req.body.map((campaign: Record<string, unknown>) => {
      const problem = this.problem(campaign, id, account.currency);
      if (problem) return { data: null, exceptions: [{ code: 2648, message: problem }] };
      const stored = { id: this.remember('campaign', id, campaign), accountId: id, body: campaign, createdTime: Math.floor(Date.now() / 1000) };
      this.campaigns.push(stored);
      return { data: this.campaignView(stored), exceptions: [] };
    });
    return { status: 200, json: { items } };
  }

  /** Campaigns made elsewhere (Ads Manager, another tool), as many as a test needs, without a call each. */
  plantCampaigns(accountId: string, names: string[]): void {
    for (const name of names)
      this.campaigns.push({
        id: this.remember('planted_campaign', accountId, { name }),
        accountId,
        body: { ad_account_id: accountId, name, status: 'ACTIVE', objective_type: 'AWARENESS' },
        createdTime: Math.floor(Date.now() / 1000),
      });
  }

  private listCampaigns(req: RecordedRequest, id: string): FakeAnswer {
    const account = this.gate(req, id);
    if ('status' in account) return account;
    const invalid: FakeAnswer = { status: 400, json: { code: 400, message: 'Invalid ad account campaign parameters.' } };
    const query = req.query;
    if (Object.keys(query).some((name) => !LIST_PARAMS.includes(name))) return invalid;
    const pageSize = query.page_size === undefined ? 25 : Number(query.page_size);
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 250) return invalid;
    if (query.order !== undefined && query.order !== 'ASCENDING' && query.order !== 'DESCENDING') return invalid;
    const statuses = query.entity_statuses === undefined ? ['ACTIVE', 'PAUSED'] : query.entity_statuses.split(',');
    if (statuses.some((status) => !STATUSES.includes(status))) return invalid;
    const ids = query.campaign_ids?.split(',');
    if (ids?.some((campaignId) => !/^\d{1,18}$/.test(campaignId))) return invalid;
    let start = 0;
    if (query.bookmark !== undefined) {
      const known = this.bookmarks.get(query.bookmark);
      if (known === undefined) return invalid;
      start = known;
    }
    const matching = this.campaigns
      .filter((campaign) => campaign.accountId === id && statuses.includes(String(campaign.body.status ?? 'ACTIVE')) && (!ids || ids.includes(campaign.id)))
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    if (query.order === 'DESCENDING') matching.reverse();
    const page = matching.slice(start, start + pageSize);
    let bookmark: string | null = null;
    if (start + page.length < matching.length) {
      bookmark = Buffer.from(`${id}:${start + page.length}:${Math.random()}`).toString('base64url');
      this.bookmarks.set(bookmark, start + page.length);
    }
    return { status: 200, json: { items: page.map((campaign) => this.campaignView(campaign)), bookmark } };
  }

  private campaignView(campaign: StoredCampaign): Record<string, unknown> {
    return {
      ...campaign.body,
      id: campaign.id,
      type: 'campaign',
      status: campaign.body.status ?? 'ACTIVE',
      created_time: campaign.createdTime,
      updated_time: campaign.createdTime,
    };
  }

  private problem(campaign: Record<string, unknown>, accountId: string, currency: string): string | null {
    if (!campaign || typeof campaign !== 'object') return 'Each campaign must be an object';
    const unknown = Object.keys(campaign).find((field) => !FIELDS.includes(field));
    if (unknown) return `Unknown field: ${unknown}`;
    if (campaign.ad_account_id !== accountId) return 'ad_account_id must match the ad account of the path';
    if (typeof campaign.name !== 'string' || !campaign.name) return 'name is required';
    if (!OBJECTIVES.includes(String(campaign.objective_type))) return `objective_type must be one of ${OBJECTIVES.join(', ')}`;
    if (campaign.status !== undefined && !STATUSES.includes(String(campaign.status))) return `status must be one of ${STATUSES.join(', ')}`;
    const daily = campaign.daily_spend_cap;
    const lifetime = campaign.lifetime_spend_cap;
    if (daily !== undefined && lifetime !== undefined) return 'daily_spend_cap and lifetime_spend_cap cannot be set at the same time';
    for (const [field, value] of [
      ['daily_spend_cap', daily],
      ['lifetime_spend_cap', lifetime],
    ] as const)
      if (value !== undefined && (!Number.isSafeInteger(value) || (value as number) <= 0)) return `${field} must be a positive integer in micro-currency`;
    for (const field of ['start_time', 'end_time'] as const) {
      const value = campaign[field];
      if (value !== undefined && (!Number.isSafeInteger(value) || (value as number) < 1_000_000_000 || (value as number) > 99_999_999_999))
        return `${field} must be a Unix timestamp in seconds`;
    }
    if (campaign.end_time !== undefined && (campaign.end_time as number) <= ((campaign.start_time as number | undefined) ?? Date.now() / 1000))
      return 'end_time must be after start_time';
    if (!CURRENCIES.includes(currency)) return `Currency ${currency} is not supported`;
    if (currency === 'USD' && daily !== undefined && (daily as number) < USD_DAILY_MINIMUM_MICROS) return 'Daily spend cap must be at least $5.00';
    return null;
  }

  // ---- OAuth, Pinterest's way ----

  /** Pinterest takes the client only as HTTP Basic. */
  protected override clientCredentials(req: RecordedRequest): { id?: string; secret?: string } {
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (!basic) return {};
    const [id, secret] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
    return { id, secret };
  }

  protected override grantRefusedAnswer(_req: RecordedRequest, error: string, description: string): FakeAnswer {
    if (error === 'invalid_client') return { status: 401, json: { code: 2, message: 'Authentication failed.' } };
    return { status: 400, json: { code: 283, message: `The authorization grant is invalid: ${description}` } };
  }

  protected override tokenAnswer(): Record<string, unknown> {
    const now = Math.floor(Date.now() / 1000);
    return {
      ...super.tokenAnswer(),
      token_type: 'bearer',
      scope: 'ads:read,ads:write',
      refresh_token_expires_in: 5_184_000,
      refresh_token_expires_at: now + 5_184_000,
      response_type: 'authorization_code',
    };
  }

  protected tokenRefusedAnswer(): FakeAnswer {
    return { status: 401, json: { code: 2, message: 'Authentication failed.' } };
  }

  protected rateLimitedAnswer(_req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    return {
      status: 429,
      headers: retryAfterSeconds > 0 ? { 'x-ratelimit-limit': '1000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(retryAfterSeconds) } : {},
      json: { code: 8, message: 'You have exceeded your rate limit. Try again later.' },
    };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return { status, json: { code: 3, message: 'Something went wrong on our end. Sorry about that.' } };
  }
}
