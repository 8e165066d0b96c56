import { randomUUID } from 'node:crypto';
import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

/**
 * Snapchat Marketing API, as the adapter meets it: `/v1/adaccounts/{id}` and
 * `/v1/adaccounts/{id}/campaigns`, Bearer tokens, the `request_status` envelope, and Snap's
 * error shape `{request_status: "ERROR", request_id, debug_message, display_message, error_code}`.
 * It checks a campaign the way Snap does: the required fields, enums, micro-currency integers,
 * ISO 8601 times with an offset, and the 20 USD campaign minimum (other currencies: any positive).
 * E1008 (invalid input) and E3003 (not found) are codes Snap answers; the others here are
 * stand-ins in Snap's format (the adapter classifies by HTTP status, not by these codes).
 *
 * `GET /v1/adaccounts/{id}/campaigns` lists the account's campaigns as Snap does: newest first,
 * each `{sub_request_status, campaign: {..., id, name, created_at}}`; `limit` (50 to 1000, else
 * E1008) pages them, with `paging.next_link` carrying an opaque `cursor` (a cursor Snap did not
 * give is refused). Without `limit`, every campaign in one answer.
 */
const OBJECTIVE_V2_TYPES = ['AWARENESS_AND_ENGAGEMENT', 'SALES', 'TRAFFIC', 'APP_PROMOTION', 'LEADS'];
const CAMPAIGN_FIELDS = [
  'ad_account_id',
  'name',
  'status',
  'start_time',
  'end_time',
  'daily_budget_micro',
  'lifetime_spend_cap_micro',
  'objective_v2_properties',
  'objective',
  'buy_model',
  'measurement_spec',
  'regulations',
];
/** Snap bills in these (its ad account reference). */
const SNAP_CURRENCIES = ['AUD', 'DKK', 'CAD', 'EUR', 'GBP', 'NOK', 'SEK', 'USD'];
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?([+-]\d{2}:?\d{2}|Z)$/;
const USD_MINIMUM_MICROS = 20_000_000;

interface StoredCampaign {
  id: string;
  accountId: string;
  body: Record<string, unknown>;
  createdAt: string;
}

export class SnapchatAdsFake extends FakeNetwork {
  readonly channel = 'snapchat_ads' as const;
  protected readonly oauth: OAuthShape = {
    consentPath: '/login/oauth2/authorize',
    tokenPath: '/login/oauth2/access_token',
    accessTokenSeconds: 3600,
    issuesRefreshTokens: true,
  };
  private readonly campaigns: StoredCampaign[] = [];
  private readonly cursors = new Map<string, number>();
  private lastCreatedAt = 0;

  protected route(req: RecordedRequest): FakeAnswer {
    const account = /^\/v1\/adaccounts\/([^/]+)$/.exec(req.path);
    if (account && req.method === 'GET') return this.readAccount(req, decodeURIComponent(account[1]));
    const campaigns = /^\/v1\/adaccounts\/([^/]+)\/campaigns$/.exec(req.path);
    if (campaigns && req.method === 'POST') return this.createCampaigns(req, decodeURIComponent(campaigns[1]));
    if (campaigns && req.method === 'GET') return this.listCampaigns(req, decodeURIComponent(campaigns[1]));
    return this.error(404, 'E3003', 'Resource can not be found', `no route for ${req.method} ${req.path}`);
  }

  private readAccount(req: RecordedRequest, id: string): FakeAnswer {
    const refused = this.checkToken(req, this.bearer(req));
    if (refused) return refused;
    const known = this.accounts.get(id);
    if (!known) return this.error(404, 'E3003', 'Resource can not be found', `Ad account ${id} not found`);
    if (!this.reachableAccount(id, this.bearer(req)))
      return this.error(403, 'E3002', 'You do not have permission to access this resource', `User is not a member of ad account ${id}`);
    return {
      status: 200,
      json: {
        request_status: 'SUCCESS',
        request_id: randomUUID(),
        adaccounts: [
          {
            sub_request_status: 'SUCCESS',
            adaccount: {
              id,
              name: `Account ${id}`,
              type: 'PARTNER',
              status: 'ACTIVE',
              currency: known.currency,
              timezone: known.timezone,
              organization_id: randomUUID(),
            },
          },
        ],
      },
    };
  }

  private createCampaigns(req: RecordedRequest, id: string): FakeAnswer {
    const refused = this.checkToken(req, this.bearer(req));
    if (refused) return refused;
    const account = this.reachableAccount(id, this.bearer(req));
    if (!this.accounts.has(id)) return this.error(404, 'E3003', 'Resource can not be found', `Ad account ${id} not found`);
    if (!account) return this.error(403, 'E3002', 'You do not have permission to access this resource', `User is not a member of ad account ${id}`);
    if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
      return this.error(415, 'E1001', 'Unsupported media type', 'Content-Type must be application/json');
    const body = req.body as { campaigns?: unknown } | undefined;
    if (!body || !Array.isArray(body.campaigns) || body.campaigns.length === 0) return this.invalid('campaigns must be a non-empty array');
    const results = body.campaigns.map((campaign) => {
      const problem = this.campaignProblem(campaign as Record<string, unknown>, id, account.currency);
      if (problem) return { sub_request_status: 'ERROR', sub_request_error_reason: problem };
      const stored = this.store(id, campaign as Record<string, unknown>);
      const created = this.campaignView(stored);
      this.created.push({ id: created.id, accountId: id, kind: 'campaign', body: campaign });
      return { sub_request_status: 'SUCCESS', campaign: created };
    });
    const failed = results.filter((result) => result.sub_request_status === 'ERROR');
    if (failed.length === results.length)
      return {
        status: 400,
        json: {
          request_status: 'ERROR',
          request_id: randomUUID(),
          debug_message: failed[0].sub_request_error_reason,
          display_message: 'We are unable to process your request',
          error_code: 'E1008',
          campaigns: results,
        },
      };
    return { status: 200, json: { request_status: failed.length ? 'PARTIAL' : 'SUCCESS', request_id: randomUUID(), campaigns: results } };
  }

  /** Campaigns made elsewhere (Ads Manager, another tool), as many as a test needs, without a call each. */
  plantCampaigns(accountId: string, names: string[]): void {
    for (const name of names) this.store(accountId, { ad_account_id: accountId, name, status: 'ACTIVE', start_time: '2026-01-01T00:00:00Z' });
  }

  /** Snap's list of the account's campaigns, newest first, paged by `limit` and `cursor`. */
  private listCampaigns(req: RecordedRequest, id: string): FakeAnswer {
    const refused = this.checkToken(req, this.bearer(req));
    if (refused) return refused;
    if (!this.accounts.has(id)) return this.error(404, 'E3003', 'Resource can not be found', `Ad account ${id} not found`);
    if (!this.reachableAccount(id, this.bearer(req)))
      return this.error(403, 'E3002', 'You do not have permission to access this resource', `User is not a member of ad account ${id}`);
    const all = this.campaigns.filter((campaign) => campaign.accountId === id).reverse();
    let start = 0;
    if (req.query.cursor !== undefined) {
      const known = this.cursors.get(req.query.cursor);
      if (known === undefined) return this.invalid('cursor is not valid');
      start = known;
    }
    const limit = req.query.limit === undefined ? undefined : Number(req.query.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 50 || limit > 1000)) return this.invalid('limit must be between 50 and 1000');
    const page = limit === undefined ? all.slice(start) : all.slice(start, start + limit);
    const end = start + page.length;
    let paging: { next_link?: string } = {};
    if (limit !== undefined && end < all.length) {
      const cursor = randomUUID().replace(/-/g, '');
      this.cursors.set(cursor, end);
      paging = { next_link: `${this.url}/v1/adaccounts/${id}/campaigns?cursor=${cursor}&limit=${limit}` };
    }
    return {
      status: 200,
      json: {
        request_status: 'SUCCESS',
        request_id: randomUUID(),
        paging,
        campaigns: page.map((campaign) => ({ sub_request_status: 'SUCCESS', campaign: this.campaignView(campaign) })),
      },
    };
  }

  /** Keeps a created campaign; creation times strictly increase, as a network's do between two creates. */
  private store(accountId: string, body: Record<string, unknown>): StoredCampaign {
    this.lastCreatedAt = Math.max(Date.now(), this.lastCreatedAt + 1);
    const stored = { id: randomUUID(), accountId, body, createdAt: new Date(this.lastCreatedAt).toISOString() };
    this.campaigns.push(stored);
    return stored;
  }

  private campaignView(campaign: StoredCampaign): Record<string, unknown> & { id: string } {
    return { ...campaign.body, id: campaign.id, created_at: campaign.createdAt, updated_at: campaign.createdAt };
  }

  /** What Snap would refuse in this campaign, or null. */
  private campaignProblem(campaign: Record<string, unknown>, accountId: string, currency: string): string | null {
    if (!campaign || typeof campaign !== 'object') return 'campaign must be an object';
    const unknown = Object.keys(campaign).find((field) => !CAMPAIGN_FIELDS.includes(field));
    if (unknown) return `Unrecognized field "${unknown}"`;
    if (campaign.ad_account_id !== accountId) return 'ad_account_id must be the ad account of the path';
    if (typeof campaign.name !== 'string' || campaign.name.length === 0 || campaign.name.length > 375) return 'name is required (at most 375 characters)';
    if (campaign.status !== 'ACTIVE' && campaign.status !== 'PAUSED') return 'status is required: ACTIVE or PAUSED';
    if (typeof campaign.start_time !== 'string' || !ISO_WITH_OFFSET.test(campaign.start_time)) return 'start_time is required, ISO 8601 with an offset';
    if (campaign.end_time !== undefined) {
      if (typeof campaign.end_time !== 'string' || !ISO_WITH_OFFSET.test(campaign.end_time)) return 'end_time must be ISO 8601 with an offset';
      if (Date.parse(campaign.end_time) <= Date.parse(campaign.start_time)) return 'end_time must be after start_time';
    }
    const v2 = campaign.objective_v2_properties as { objective_v2_type?: unknown } | undefined;
    if (v2 !== undefined && !OBJECTIVE_V2_TYPES.includes(String(v2?.objective_v2_type)))
      return `objective_v2_type must be one of ${OBJECTIVE_V2_TYPES.join(', ')}`;
    if (campaign.objective !== undefined && v2 !== undefined) return 'objective and objective_v2_properties cannot both be set';
    const daily = campaign.daily_budget_micro;
    const lifetime = campaign.lifetime_spend_cap_micro;
    for (const [field, value] of [
      ['daily_budget_micro', daily],
      ['lifetime_spend_cap_micro', lifetime],
    ] as const)
      if (value !== undefined && (!Number.isSafeInteger(value) || (value as number) <= 0)) return `${field} must be a positive integer of micro-currency`;
    if (lifetime !== undefined && campaign.end_time === undefined) return 'a lifetime spend cap needs an end_time';
    if (!SNAP_CURRENCIES.includes(currency)) return `ad account currency ${currency} is not supported`;
    const budget = (daily ?? lifetime) as number | undefined;
    if (currency === 'USD' && budget !== undefined && budget < USD_MINIMUM_MICROS)
      return 'The campaign daily budget or lifetime spend cap must be at least 20.00 USD';
    return null;
  }

  private invalid(message: string): FakeAnswer {
    return this.error(400, 'E1008', 'We are unable to process your request', message);
  }

  private error(status: number, code: string, display: string, debug: string): FakeAnswer {
    return { status, json: { request_status: 'ERROR', request_id: randomUUID(), debug_message: debug, display_message: display, error_code: code } };
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return this.error(401, 'E0001', 'Unauthorized', why === 'expired' ? 'The access token expired' : 'The access token is invalid');
  }

  protected rateLimitedAnswer(_req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    const answer = this.error(429, 'E0429', 'Too many requests', 'Rate limit exceeded');
    return retryAfterSeconds > 0 ? { ...answer, headers: { 'retry-after': String(retryAfterSeconds) } } : answer;
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return this.error(status, 'E0000', 'Something went wrong', 'Internal error');
  }
}
