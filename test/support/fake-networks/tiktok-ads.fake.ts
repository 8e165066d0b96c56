import { randomBytes } from 'node:crypto';
import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';
import { decimals, isoExponent } from './fake-units';

const API = '/open_api/v1.3';
const OBJECTIVES = ['REACH', 'TRAFFIC', 'VIDEO_VIEWS', 'LEAD_GENERATION', 'ENGAGEMENT', 'APP_PROMOTION', 'WEB_CONVERSIONS', 'PRODUCT_SALES'];
const BUDGET_MODES = ['BUDGET_MODE_DAY', 'BUDGET_MODE_TOTAL', 'BUDGET_MODE_INFINITE'];
/** Campaign-level daily minimum TikTok applies (CHANNELS.md: about 20 USD); checked for USD accounts only. */
const MIN_DAILY_USD = 20;

/**
 * TikTok API for Business as the adapter meets it: `Access-Token` header, HTTP 200 with a non-zero
 * `code` for every refusal, `advertiser/info/` and `campaign/create/`, and the JSON token call.
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
        list.push({ advertiser_id: String(id), name: `Advertiser ${id}`, currency: account.currency, timezone: account.timezone, display_timezone: account.timezone, status: 'STATUS_ENABLE' });
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
      if (!OBJECTIVES.includes(String(body.objective_type))) return envelope(40002, `objective_type: Must be one of: ${OBJECTIVES.join(', ')}.`);
      if (body.objective_type === 'APP_PROMOTION' && !body.app_promotion_type) return envelope(40002, 'app_promotion_type: Missing data for required field.');
      if (!BUDGET_MODES.includes(String(body.budget_mode))) return envelope(40002, `budget_mode: Must be one of: ${BUDGET_MODES.join(', ')}.`);
      if (body.budget_mode !== 'BUDGET_MODE_INFINITE') {
        if (typeof body.budget !== 'number' || !(body.budget > 0)) return envelope(40002, 'budget: Not a valid number.');
        if (decimals(body.budget) > isoExponent(account.currency)) return envelope(40002, `budget: At most ${isoExponent(account.currency)} decimal places for ${account.currency}.`);
        if (body.budget_mode === 'BUDGET_MODE_DAY' && account.currency === 'USD' && body.budget < MIN_DAILY_USD)
          return envelope(40002, `The daily budget of the campaign must be at least ${MIN_DAILY_USD.toFixed(2)} USD.`);
      }
      const id = this.remember('campaign', account.id, body);
      return envelope(0, 'OK', { campaign_id: id });
    }
    return { status: 404, text: 'Not Found' };
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

function envelope(code: number, message: string, data: unknown = {}): FakeAnswer {
  return { status: 200, json: { code, message, request_id: requestId(), data } };
}

function requestId(): string {
  return `2026112501${randomBytes(8).toString('hex')}`;
}
