import { randomBytes } from 'node:crypto';
import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

const VERSION = 'v24.0';
const OBJECTIVES = ['OUTCOME_SALES', 'OUTCOME_TRAFFIC', 'OUTCOME_AWARENESS', 'OUTCOME_LEADS', 'OUTCOME_ENGAGEMENT', 'OUTCOME_APP_PROMOTION'];
const LONG_LIVED_SECONDS = 5_183_944; // about 60 days

/**
 * The Graph API as the Meta adapter meets it: `GET act_{id}`, `POST act_{id}/campaigns`, the code
 * exchange and the long-lived token exchange, all refusing with Meta's `{"error": {...}}` (HTTP 400
 * for nearly everything, the `code` says what).
 */
export class MetaAdsFake extends FakeNetwork {
  readonly channel = 'meta_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: `/${VERSION}/dialog/oauth`, tokenPath: `/${VERSION}/oauth/access_token`, issuesRefreshTokens: false };
  /** `account_status` per ad account id (1 ACTIVE unless set). */
  readonly accountStatus = new Map<string, number>();

  protected route(req: RecordedRequest): FakeAnswer {
    const match = new RegExp(`^/${VERSION}/act_(\\d+)(/campaigns)?$`).exec(req.path);
    if (!match) return graphError(400, 'Unknown path components: ' + req.path, 'OAuthException', 2500);
    const token = this.bearer(req) ?? req.query.access_token ?? (req.body as { access_token?: string } | undefined)?.access_token;
    if (!token) return graphError(400, 'An active access token must be used to query information about the current user.', 'OAuthException', 2500);
    const refused = this.checkToken(req, token);
    if (refused) return refused;
    const [, id, campaigns] = match;
    const account = this.reachableAccount(id, token);
    const verb = req.method === 'GET' ? 'get' : 'post';
    if (!account)
      return graphError(
        400,
        `Unsupported ${verb} request. Object with ID 'act_${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
        'GraphMethodException',
        100,
        33,
      );

    if (!campaigns && req.method === 'GET') {
      const fields = (req.query.fields ?? '').split(',');
      const all: Record<string, unknown> = { account_status: this.accountStatus.get(id) ?? 1, currency: account.currency, timezone_name: account.timezone };
      return { status: 200, json: { ...Object.fromEntries(fields.filter((f) => f in all).map((f) => [f, all[f]])), id: `act_${id}` } };
    }
    if (!campaigns || req.method !== 'POST') return graphError(400, 'Unsupported request method', 'GraphMethodException', 100);

    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body.name !== 'string' || !body.name) return invalidParameter('The name parameter is required.', 'Missing campaign name');
    if (!OBJECTIVES.includes(String(body.objective))) return invalidParameter(`Param objective must be one of {${OBJECTIVES.join(', ')}}`, 'Invalid objective', 2490487);
    if (!['ACTIVE', 'PAUSED'].includes(String(body.status))) return invalidParameter('Param status must be one of {ACTIVE, PAUSED}', 'Invalid status');
    if (!Array.isArray(body.special_ad_categories)) return invalidParameter('(#100) The parameter special_ad_categories is required', 'Special ad categories required', 1885183);
    const budgets = ['daily_budget', 'lifetime_budget'].filter((field) => field in body);
    if (budgets.length !== 1) return invalidParameter('Exactly one of daily_budget or lifetime_budget is needed for a campaign budget', 'Campaign budget required', 1885621);
    const amount = body[budgets[0]];
    if (!(Number.isSafeInteger(amount) || (typeof amount === 'string' && /^\d+$/.test(amount))) || Number(amount) <= 0)
      return invalidParameter(`Param ${budgets[0]} must be a positive integer in the currency's offset units`, 'Invalid budget', 1885272);
    const campaignId = this.remember('campaign', id, body);
    return { status: 200, json: { id: campaignId } };
  }

  /** GET: the code exchange (`code`, `redirect_uri`) or the long-lived exchange (`grant_type=fb_exchange_token`). */
  protected override tokenEndpoint(req: RecordedRequest): FakeAnswer {
    if (req.method !== 'GET') return graphError(400, 'Unsupported post request.', 'GraphMethodException', 100);
    const q = req.query;
    if (q.client_id !== this.clientId) return graphError(400, 'Error validating application. Invalid application ID.', 'OAuthException', 101);
    if (q.client_secret !== this.clientSecret) return graphError(400, 'Error validating client secret.', 'OAuthException', 1);
    if (q.grant_type === 'fb_exchange_token') {
      if (this.tokenState(q.fb_exchange_token) !== 'valid') return graphError(400, 'Error validating access token: Session has expired.', 'OAuthException', 190, 463);
      return { status: 200, json: { access_token: this.issueAccessToken(`EAAG${randomBytes(12).toString('hex')}`), token_type: 'bearer', expires_in: LONG_LIVED_SECONDS } };
    }
    const refusal = this.redeemCode(q.code, q.redirect_uri);
    if (refusal) return graphError(400, `Invalid verification code format. (${refusal})`, 'OAuthException', 100, 36009);
    return { status: 200, json: { access_token: this.issueAccessToken(`EAAG${randomBytes(12).toString('hex')}`), token_type: 'bearer', expires_in: 5_400 } };
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return why === 'expired'
      ? graphError(400, 'Error validating access token: Session has expired on Tuesday, 24-Nov-26 10:00:00 PST.', 'OAuthException', 190, 463)
      : graphError(400, 'Invalid OAuth access token - Cannot parse access token', 'OAuthException', 190);
  }

  protected rateLimitedAnswer(_req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    const answer = graphError(400, 'User request limit reached', 'OAuthException', 17, 2446079);
    const usage = { '1234567890': [{ type: 'ads_management', call_count: 100, total_cputime: 30, total_time: 40, estimated_time_to_regain_access: Math.ceil(retryAfterSeconds / 60) }] };
    return { ...answer, headers: { 'x-business-use-case-usage': JSON.stringify(usage) } };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    const [code, message] = status === 503 ? [2, 'Service temporarily unavailable'] : [1, 'An unknown error occurred'];
    return { status, json: { error: { message, type: 'OAuthException', code, is_transient: true, fbtrace_id: 'AbCfake' } } };
  }
}

function graphError(status: number, message: string, type: string, code: number, subcode?: number): FakeAnswer {
  return { status, json: { error: { message, type, code, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: 'AbCfake' } } };
}

function invalidParameter(message: string, userTitle: string, subcode?: number): FakeAnswer {
  return {
    status: 400,
    json: { error: { message: 'Invalid parameter', type: 'OAuthException', code: 100, ...(subcode ? { error_subcode: subcode } : {}), error_user_title: userTitle, error_user_msg: message, fbtrace_id: 'AbCfake' } },
  };
}
