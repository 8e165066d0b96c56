import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

/**
 * Reddit Ads API v3, as the adapter meets it: `/api/v3/ad_accounts/{id}` and
 * `/api/v3/ad_accounts/{id}/campaigns` with `{data: {...}}` bodies and answers, Bearer tokens,
 * a descriptive User-Agent on every call (Reddit throttles default ones), and Reddit's OAuth on
 * `/api/v1/authorize` and `/api/v1/access_token` (client as HTTP Basic only; no new refresh token
 * on refresh; an unknown code answered HTTP 200 `{"error": "invalid_grant"}`). A campaign is
 * checked as Reddit's spec reads: no unknown fields, the enums, `configured_status` required,
 * name 3 to 500 characters, campaign budget optimization needing goal, bid and start time, a
 * lifetime goal needing an end time. The error codes in `{error: {code, message}}` are stand-ins in
 * that shape (unconfirmed); 401 is Reddit's classic `{"message": "Unauthorized", "error": 401}`.
 *
 * `GET /api/v3/ad_accounts/{id}/campaigns` lists the account's campaigns, oldest first:
 * `{data: [...], pagination: {next_url}}` with `page.size` (1 to 1000) and `page.token` (only one
 * it gave, carried in `next_url`); other parameters are refused (unconfirmed shape, see the adapter).
 */
const OBJECTIVES = ['APP_INSTALLS', 'CATALOG_SALES', 'CLICKS', 'CONVERSIONS', 'IMPRESSIONS', 'LEAD_GENERATION', 'VIDEO_VIEWABLE_IMPRESSIONS'];
const STATUSES = ['ACTIVE', 'PAUSED', 'ARCHIVED', 'DELETED'];
const BID_STRATEGIES = ['BIDLESS', 'MANUAL_BIDDING', 'MAXIMIZE_VOLUME', 'TARGET_CPX'];
const BID_TYPES = ['CPC', 'CPM', 'CPV', 'CPV6', 'CPV15'];
const FIELDS = [
  'name',
  'objective',
  'configured_status',
  'is_campaign_budget_optimization',
  'goal_type',
  'goal_value',
  'bid_strategy',
  'bid_type',
  'bid_value',
  'start_time',
  'end_time',
  'funding_instrument_id',
  'special_ad_categories',
  'spend_cap',
  'app_id',
  'optimization_goal',
  'conversion_pixel_id',
  'schedule',
];
const DEFAULT_AGENTS = /^(|undici|node|node-fetch|python-requests.*|curl.*)$/i;
const LIST_PARAMS = ['page.size', 'page.token'];

interface StoredCampaign {
  id: string;
  accountId: string;
  body: Record<string, unknown>;
  createdAt: string;
}

export class RedditAdsFake extends FakeNetwork {
  readonly channel = 'reddit_ads' as const;
  protected readonly oauth: OAuthShape = {
    consentPath: '/api/v1/authorize',
    tokenPath: '/api/v1/access_token',
    accessTokenSeconds: 86_400,
    issuesRefreshTokens: true,
    revocation: { path: '/api/v1/revoke_token', clientAuth: 'basic', requires: ['token_type_hint'] },
  };
  private readonly campaigns: StoredCampaign[] = [];
  private readonly pageTokens = new Map<string, number>();

  protected route(req: RecordedRequest): FakeAnswer {
    if (DEFAULT_AGENTS.test(req.headers['user-agent'] ?? '')) return { status: 429, json: { message: 'Too Many Requests', error: 429 } };
    const account = /^\/api\/v3\/ad_accounts\/([^/]+)$/.exec(req.path);
    if (account && req.method === 'GET') return this.readAccount(req, decodeURIComponent(account[1]));
    const campaigns = /^\/api\/v3\/ad_accounts\/([^/]+)\/campaigns$/.exec(req.path);
    if (campaigns && req.method === 'POST') return this.createCampaign(req, decodeURIComponent(campaigns[1]));
    if (campaigns && req.method === 'GET') return this.listCampaigns(req, decodeURIComponent(campaigns[1]));
    return this.error(404, 'NOT_FOUND', `no route for ${req.method} ${req.path}`);
  }

  private gate(req: RecordedRequest, id: string): FakeAnswer | { currency: string; timezone: string } {
    const refused = this.checkToken(req, this.bearer(req));
    if (refused) return refused;
    if (!this.accounts.has(id)) return this.error(404, 'NOT_FOUND', `Ad account ${id} not found`);
    return this.reachableAccount(id, this.bearer(req)) ?? this.error(403, 'FORBIDDEN', `You do not have access to ad account ${id}`);
  }

  private readAccount(req: RecordedRequest, id: string): FakeAnswer {
    const account = this.gate(req, id);
    if ('status' in account) return account;
    return {
      status: 200,
      json: {
        data: {
          id,
          name: `Ads ${id}`,
          type: 'SELF_SERVE',
          currency: account.currency,
          time_zone_id: account.timezone,
          admin_approval: 'VALID',
          business_id: '950c8eac-0000-4000-8000-000000000001',
        },
      },
    };
  }

  private createCampaign(req: RecordedRequest, id: string): FakeAnswer {
    const account = this.gate(req, id);
    if ('status' in account) return account;
    if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
      return this.error(415, 'UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    const body = req.body as { data?: Record<string, unknown> } | undefined;
    if (!body || typeof body.data !== 'object' || body.data === null || Object.keys(body).length !== 1)
      return this.error(400, 'INVALID_INPUT', 'The body must be {"data": {...}}');
    const problem = this.problem(body.data);
    if (problem) return this.error(400, 'INVALID_INPUT', problem);
    const stored = { id: this.remember('campaign', id, body.data), accountId: id, body: body.data, createdAt: new Date().toISOString() };
    this.campaigns.push(stored);
    return { status: 201, json: { data: this.campaignView(stored) } };
  }

  /** Campaigns made elsewhere (Ads Manager, another tool), as many as a test needs, without a call each. */
  plantCampaigns(accountId: string, names: string[]): void {
    for (const name of names)
      this.campaigns.push({
        id: this.remember('planted_campaign', accountId, { name }),
        accountId,
        body: { name, objective: 'CLICKS', configured_status: 'ACTIVE' },
        createdAt: new Date().toISOString(),
      });
  }

  private listCampaigns(req: RecordedRequest, id: string): FakeAnswer {
    const account = this.gate(req, id);
    if ('status' in account) return account;
    const unknown = Object.keys(req.query).find((name) => !LIST_PARAMS.includes(name));
    if (unknown) return this.error(400, 'INVALID_INPUT', `${unknown}: Extra inputs are not permitted`);
    const size = req.query['page.size'] === undefined ? 100 : Number(req.query['page.size']);
    if (!Number.isInteger(size) || size < 1 || size > 1000) return this.error(400, 'INVALID_INPUT', 'page.size: Input should be between 1 and 1000');
    let start = 0;
    if (req.query['page.token'] !== undefined) {
      const known = this.pageTokens.get(req.query['page.token']);
      if (known === undefined) return this.error(400, 'INVALID_INPUT', 'page.token: invalid page token');
      start = known;
    }
    const all = this.campaigns.filter((campaign) => campaign.accountId === id);
    const page = all.slice(start, start + size);
    let nextUrl: string | null = null;
    if (start + page.length < all.length) {
      const token = Buffer.from(`${start + page.length}:${Math.random()}`).toString('base64url');
      this.pageTokens.set(token, start + page.length);
      nextUrl = `${this.url}/api/v3/ad_accounts/${id}/campaigns?page.size=${size}&page.token=${token}`;
    }
    return { status: 200, json: { data: page.map((campaign) => this.campaignView(campaign)), pagination: { next_url: nextUrl } } };
  }

  private campaignView(campaign: StoredCampaign): Record<string, unknown> {
    return {
      ...campaign.body,
      id: campaign.id,
      ad_account_id: campaign.accountId,
      effective_status: campaign.body.configured_status,
      created_at: campaign.createdAt,
      modified_at: campaign.createdAt,
    };
  }

  private problem(data: Record<string, unknown>): string | null {
    const unknown = Object.keys(data).find((field) => !FIELDS.includes(field));
    if (unknown) return `${unknown}: Extra inputs are not permitted`;
    if (typeof data.name !== 'string' || data.name.length < 3 || data.name.length > 500) return 'name: String should have between 3 and 500 characters';
    if (!OBJECTIVES.includes(String(data.objective))) return `objective: Input should be ${OBJECTIVES.join(', ')}`;
    if (!STATUSES.includes(String(data.configured_status))) return `configured_status: Field required (${STATUSES.join(', ')})`;
    for (const field of ['start_time', 'end_time'] as const)
      if (data[field] !== undefined && (typeof data[field] !== 'string' || Number.isNaN(Date.parse(data[field] as string))))
        return `${field}: Input should be a valid datetime`;
    if (data.end_time !== undefined && data.start_time !== undefined && Date.parse(data.end_time as string) <= Date.parse(data.start_time as string))
      return 'end_time: must be after start_time';
    if (data.is_campaign_budget_optimization === true) {
      if (data.goal_type !== 'DAILY_SPEND' && data.goal_type !== 'LIFETIME_SPEND') return 'goal_type: Input should be DAILY_SPEND or LIFETIME_SPEND';
      if (!Number.isSafeInteger(data.goal_value) || (data.goal_value as number) <= 0) return 'goal_value: Input should be a positive integer (micro-currency)';
      if (!BID_STRATEGIES.includes(String(data.bid_strategy))) return `bid_strategy: required with campaign budget optimization (${BID_STRATEGIES.join(', ')})`;
      if (!BID_TYPES.includes(String(data.bid_type))) return `bid_type: required with campaign budget optimization (${BID_TYPES.join(', ')})`;
      if (data.start_time === undefined) return 'start_time: required with campaign budget optimization';
      if (data.goal_type === 'LIFETIME_SPEND' && data.end_time === undefined) return 'end_time: required with a LIFETIME_SPEND goal';
    } else if (data.goal_type !== undefined || data.goal_value !== undefined)
      return 'goal_type and goal_value on a campaign need is_campaign_budget_optimization';
    return null;
  }

  private error(status: number, code: string, message: string): FakeAnswer {
    return { status, json: { error: { code, message } } };
  }

  // ---- OAuth, Reddit's way ----

  protected override clientCredentials(req: RecordedRequest): { id?: string; secret?: string } {
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (!basic) return {};
    const [id, secret] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
    return { id, secret };
  }

  protected override tokenEndpoint(req: RecordedRequest): FakeAnswer {
    if (DEFAULT_AGENTS.test(req.headers['user-agent'] ?? '')) return { status: 429, json: { message: 'Too Many Requests', error: 429 } };
    const form = (req.body ?? {}) as Record<string, string>;
    const answer = super.tokenEndpoint(req);
    const json = answer.json as Record<string, unknown>;
    if (answer.status === 200 && form.grant_type === 'refresh_token') delete json.refresh_token;
    if (answer.status === 200) return { status: 200, json: { ...json, token_type: 'bearer', scope: 'adsread adsedit' } };
    // Reddit answers an unknown authorization code with HTTP 200 and the error in the body.
    if (form.grant_type === 'authorization_code' && json.error === 'invalid_grant') return { status: 200, json: { error: 'invalid_grant' } };
    return { status: answer.status, json: { error: json.error } };
  }

  protected tokenRefusedAnswer(): FakeAnswer {
    return { status: 401, json: { message: 'Unauthorized', error: 401 } };
  }

  protected rateLimitedAnswer(_req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    return {
      status: 429,
      headers: retryAfterSeconds > 0 ? { 'ratelimit-policy': '200;w=60', ratelimit: `limit=200, remaining=0, reset=${retryAfterSeconds}` } : {},
      json: { error: { code: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' } },
    };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return this.error(status, 'INTERNAL_ERROR', 'Internal server error');
  }
}
