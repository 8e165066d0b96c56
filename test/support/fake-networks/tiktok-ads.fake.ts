import { randomBytes } from 'node:crypto';
import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';
import { decimals, isoExponent } from './fake-units';

const API = '/open_api/v1.3';
const OBJECTIVES = ['REACH', 'TRAFFIC', 'VIDEO_VIEWS', 'LEAD_GENERATION', 'ENGAGEMENT', 'APP_PROMOTION', 'WEB_CONVERSIONS', 'PRODUCT_SALES'];
const BUDGET_MODES = ['BUDGET_MODE_DAY', 'BUDGET_MODE_TOTAL', 'BUDGET_MODE_INFINITE'];
/** Campaign-level daily minimum TikTok applies (CHANNELS.md: about 20 USD); checked for USD accounts only. */
const MIN_DAILY_USD = 20;
/** `campaign_name` at most 512 characters, a Chinese or Japanese one counting as two. */
const NAME_MAX = 512;
const CAMPAIGN_FIELDS = [
  'campaign_id',
  'campaign_name',
  'advertiser_id',
  'budget',
  'budget_mode',
  'objective_type',
  'operation_status',
  'create_time',
  'modify_time',
];
const FILTERS = [
  'campaign_ids',
  'campaign_name',
  'objective_type',
  'primary_status',
  'secondary_status',
  'creation_filter_start_time',
  'creation_filter_end_time',
  'campaign_type',
];

/**
 * TikTok API for Business as the adapter meets it: `Access-Token` header, HTTP 200 with a non-zero
 * `code` for every refusal, `advertiser/info/`, `campaign/create/` (with its `create_time`, UTC
 * seconds) and `campaign/get/` (JSON `filtering` with a fuzzy `campaign_name`, JSON `fields`,
 * `page`/`page_size` up to 1000 and `page_info`), and the JSON token call.
 * The consent page sends the browser back with `auth_code` and `code` (unconfirmed: both).
 */
export class TiktokAdsFake extends FakeNetwork {
  readonly channel = 'tiktok_ads' as const;
  protected readonly oauth: OAuthShape = {
    consentPath: '/portal/auth',
    tokenPath: `${API}/oauth2/access_token/`,
    consentClientIdParam: 'app_id',
    codeParam: ['auth_code', 'code'],
    issuesRefreshTokens: false,
  };
  /** `create_time` of each campaign made or planted ("YYYY-MM-DD HH:MM:SS", UTC). */
  private readonly createTimes = new Map<string, string>();

  /** A campaign put in the advertiser by other means (the Ads Manager, an older try), created at `createTime`. */
  plantCampaign(advertiserId: string, name: string, createTime: string): string {
    const id = this.remember('campaign', advertiserId, {
      advertiser_id: advertiserId,
      campaign_name: name,
      objective_type: 'WEB_CONVERSIONS',
      budget_mode: 'BUDGET_MODE_DAY',
      budget: 50,
    });
    this.createTimes.set(id, createTime);
    return id;
  }

  protected route(req: RecordedRequest): FakeAnswer {
    const token = req.headers['access-token'];
    if (!token) return envelope(40104, 'Access token is null, please check your request.');
    const refused = this.checkToken(req, token);
    if (refused) return refused;

    if (req.path === `${API}/advertiser/info/` && req.method === 'GET') {
      let ids: unknown;
      try {
        ids = JSON.parse(req.query.advertiser_ids ?? '');
      } catch {
        return envelope(40002, 'advertiser_ids: Invalid JSON string.');
      }
      if (!Array.isArray(ids) || ids.length === 0) return envelope(40002, 'advertiser_ids: Field is required.');
      const list = [];
      for (const id of ids) {
        const account = this.reachableAccount(String(id), token);
        if (!account) return envelope(40001, `No permission to operate advertiser ${id}.`);
        list.push({
          advertiser_id: String(id),
          name: `Advertiser ${id}`,
          currency: account.currency,
          timezone: account.timezone,
          display_timezone: account.timezone,
          status: 'STATUS_ENABLE',
        });
      }
      return envelope(0, 'OK', { list });
    }

    if (req.path === `${API}/campaign/create/` && req.method === 'POST') {
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return envelope(40002, 'Content-Type must be application/json.');
      const body = (req.body ?? {}) as Record<string, unknown>;
      const account = typeof body.advertiser_id === 'string' ? this.reachableAccount(body.advertiser_id, token) : undefined;
      if (typeof body.advertiser_id !== 'string') return envelope(40002, 'advertiser_id: Missing data for required field.');
      if (!account) return envelope(40001, `No permission to operate advertiser ${body.advertiser_id}.`);
      if (typeof body.campaign_name !== 'string' || !body.campaign_name) return envelope(40002, 'campaign_name: Missing data for required field.');
      if (nameLength(body.campaign_name) > NAME_MAX) return envelope(40002, `campaign_name: Length must be between 1 and ${NAME_MAX}.`);
      if (!OBJECTIVES.includes(String(body.objective_type))) return envelope(40002, `objective_type: Must be one of: ${OBJECTIVES.join(', ')}.`);
      if (body.objective_type === 'APP_PROMOTION' && !body.app_promotion_type) return envelope(40002, 'app_promotion_type: Missing data for required field.');
      if (!BUDGET_MODES.includes(String(body.budget_mode))) return envelope(40002, `budget_mode: Must be one of: ${BUDGET_MODES.join(', ')}.`);
      if (body.budget_mode !== 'BUDGET_MODE_INFINITE') {
        if (typeof body.budget !== 'number' || !(body.budget > 0)) return envelope(40002, 'budget: Not a valid number.');
        if (decimals(body.budget) > isoExponent(account.currency))
          return envelope(40002, `budget: At most ${isoExponent(account.currency)} decimal places for ${account.currency}.`);
        if (body.budget_mode === 'BUDGET_MODE_DAY' && account.currency === 'USD' && body.budget < MIN_DAILY_USD)
          return envelope(40002, `The daily budget of the campaign must be at least ${MIN_DAILY_USD.toFixed(2)} USD.`);
      }
      const id = this.remember('campaign', account.id, body);
      this.createTimes.set(id, new Date().toISOString().slice(0, 19).replace('T', ' '));
      return envelope(0, 'OK', { campaign_id: id });
    }

    if (req.path === `${API}/campaign/get/` && req.method === 'GET') return this.campaigns(req, token);
    return { status: 404, text: 'Not Found' };
  }

  /** `GET campaign/get/`: the advertiser's campaigns (deleted ones never exist here), filtered, one page. */
  private campaigns(req: RecordedRequest, token: string): FakeAnswer {
    const advertiserId = req.query.advertiser_id;
    if (!advertiserId) return envelope(40002, 'advertiser_id: Missing data for required field.');
    if (!this.reachableAccount(advertiserId, token)) return envelope(40001, `No permission to operate advertiser ${advertiserId}.`);
    let filtering: Record<string, unknown> = {};
    let fields: string[] | undefined;
    try {
      if (req.query.filtering !== undefined) filtering = JSON.parse(req.query.filtering);
      if (req.query.fields !== undefined) fields = JSON.parse(req.query.fields);
    } catch {
      return envelope(40002, 'filtering, fields: Invalid JSON string.');
    }
    if (typeof filtering !== 'object' || filtering === null || Array.isArray(filtering)) return envelope(40002, 'filtering: Not a valid mapping type.');
    const unknownFilter = Object.keys(filtering).find((key) => !FILTERS.includes(key));
    if (unknownFilter) return envelope(40002, `filtering.${unknownFilter}: Unknown field.`);
    if (fields !== undefined && (!Array.isArray(fields) || fields.some((field) => !CAMPAIGN_FIELDS.includes(field))))
      return envelope(40002, `fields: Must be a list of: ${CAMPAIGN_FIELDS.join(', ')}.`);
    const page = Number(req.query.page ?? 1);
    const pageSize = Number(req.query.page_size ?? 10);
    if (!Number.isInteger(page) || page < 1) return envelope(40002, 'page: Must be greater than or equal to 1.');
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) return envelope(40002, 'page_size: Must be between 1 and 1000.');
    const nameFilter = typeof filtering.campaign_name === 'string' ? filtering.campaign_name.toLowerCase() : undefined;
    const rows = this.created
      .filter((entry) => entry.kind === 'campaign' && entry.accountId === advertiserId)
      .map((entry) => {
        const body = entry.body as Record<string, unknown>;
        const createTime = this.createTimes.get(entry.id) ?? '2026-01-01 00:00:00';
        return {
          ...body,
          campaign_id: entry.id,
          advertiser_id: advertiserId,
          operation_status: 'ENABLE',
          create_time: createTime,
          modify_time: createTime,
        } as Record<string, unknown>;
      })
      .filter((row) => nameFilter === undefined || String(row.campaign_name).toLowerCase().includes(nameFilter))
      .reverse(); // newest first, as TikTok lists them (unconfirmed)
    const list = rows
      .slice((page - 1) * pageSize, page * pageSize)
      .map((row) => (fields ? Object.fromEntries(fields.map((field) => [field, row[field]])) : row));
    return envelope(0, 'OK', { list, page_info: { page, page_size: pageSize, total_number: rows.length, total_page: Math.ceil(rows.length / pageSize) } });
  }

  /** `POST .../oauth2/access_token/` with JSON `{app_id, secret, auth_code}`: a long-term token, no refresh token. */
  protected override tokenEndpoint(req: RecordedRequest): FakeAnswer {
    const body = (req.body ?? {}) as Record<string, string>;
    if (req.method !== 'POST' || typeof req.body !== 'object') return envelope(40002, 'The request body must be JSON.');
    if (body.app_id !== this.clientId || body.secret !== this.clientSecret) return envelope(40001, 'App ID or secret is incorrect.'); // (unconfirmed) code
    const refusal = this.redeemCode(body.auth_code, undefined);
    if (refusal) return envelope(40002, `auth_code is invalid: ${refusal}.`); // (unconfirmed) code
    const advertiserIds = [...this.accounts.keys()];
    return envelope(0, 'OK', { access_token: this.issueAccessToken(`tt${randomBytes(16).toString('hex')}`), advertiser_ids: advertiserIds, scope: [4, 5, 6] });
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return why === 'expired' ? envelope(40102, 'Access token has expired.') : envelope(40105, 'Access token is incorrect or has been revoked.');
  }

  protected rateLimitedAnswer(): FakeAnswer {
    return envelope(40100, 'Requests made too frequently. Please try again later.');
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return { status, json: { code: 50000, message: 'System error, please try again later.', request_id: requestId(), data: {} } };
  }
}

/** TikTok's count: a Chinese or Japanese (or Korean) character is two. */
function nameLength(name: string): number {
  let length = 0;
  for (const char of name) length += /[\u1100-\u115F\u2E80-\u9FFF\uAC00-\uD7A3\uF900-\uFAFF\uFF00-\uFF60]|[\u{20000}-\u{3FFFD}]/u.test(char) ? 2 : 1;
  return length;
}

function envelope(code: number, message: string, data: unknown = {}): FakeAnswer {
  return { status: 200, json: { code, message, request_id: requestId(), data } };
}

function requestId(): string {
  return `2026112501${randomBytes(8).toString('hex')}`;
}
