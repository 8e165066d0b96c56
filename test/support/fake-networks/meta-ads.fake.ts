import { randomBytes } from 'node:crypto';
import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

const VERSION = 'v24.0';
const OBJECTIVES = ['OUTCOME_SALES', 'OUTCOME_TRAFFIC', 'OUTCOME_AWARENESS', 'OUTCOME_LEADS', 'OUTCOME_ENGAGEMENT', 'OUTCOME_APP_PROMOTION'];
const LONG_LIVED_SECONDS = 5_183_944; // about 60 days

/** Meta's smallest daily campaign budget, in the offset of a two-decimal currency (1.00): below it, 1885272 "budget too low". */
const MIN_DAILY_BUDGET = 100;

/**
 * The Graph API as the Meta adapter meets it: `GET act_{id}`, `POST act_{id}/campaigns` (with
 * `execution_options: ["validate_only"]`: checked, answered `{"success": true}`, nothing made),
 * `GET act_{id}/campaigns` (with `filtering`, `fields`, `limit`, cursor paging), the code exchange
 * and the long-lived token exchange, all refusing with Meta's `{"error": {...}}` (HTTP 400 for
 * nearly everything, the `code` says what).
 */
export class MetaAdsFake extends FakeNetwork {
  readonly channel = 'meta_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: `/${VERSION}/dialog/oauth`, tokenPath: `/${VERSION}/oauth/access_token`, issuesRefreshTokens: false };
  /** `account_status` per ad account id (1 ACTIVE unless set). */
  readonly accountStatus = new Map<string, number>();

  protected route(req: RecordedRequest): FakeAnswer {
    // Revoking permissions: DELETE /me/permissions with the user token ends the app's authorization.
    if (req.path === `/${VERSION}/me/permissions` && req.method === 'DELETE') {
      const token = this.bearer(req) ?? req.query.access_token;
      const refused = this.checkToken(req, token);
      if (refused) return refused;
      this.revokeGrant(token);
      return { status: 200, json: { success: true } };
    }
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
    if (campaigns && req.method === 'GET') return this.listCampaigns(req, id);
    if (!campaigns || req.method !== 'POST') return graphError(400, 'Unsupported request method', 'GraphMethodException', 100);

    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body.name !== 'string' || !body.name) return invalidParameter('The name parameter is required.', 'Missing campaign name');
    if (!OBJECTIVES.includes(String(body.objective)))
      return invalidParameter(`Param objective must be one of {${OBJECTIVES.join(', ')}}`, 'Invalid objective', 2490487);
    if (!['ACTIVE', 'PAUSED'].includes(String(body.status))) return invalidParameter('Param status must be one of {ACTIVE, PAUSED}', 'Invalid status');
    if (!Array.isArray(body.special_ad_categories))
      return invalidParameter('(#100) The parameter special_ad_categories is required', 'Special ad categories required', 1885183);
    const budgets = ['daily_budget', 'lifetime_budget'].filter((field) => field in body);
    if (budgets.length !== 1)
      return invalidParameter('Exactly one of daily_budget or lifetime_budget is needed for a campaign budget', 'Campaign budget required', 1885621);
    const amount = body[budgets[0]];
    if (!(Number.isSafeInteger(amount) || (typeof amount === 'string' && /^\d+$/.test(amount))) || Number(amount) <= 0)
      return invalidParameter(`Param ${budgets[0]} must be a positive integer in the currency's offset units`, 'Invalid budget', 1885272);
    if (budgets[0] === 'daily_budget' && account.currency === 'USD' && Number(amount) < MIN_DAILY_BUDGET)
      return invalidParameter('Your budget is too low. The minimum budget for this campaign is $1.00.', 'Budget Too Low', 1885272);
    const options = body.execution_options;
    if (options !== undefined) {
      if (!Array.isArray(options) || options.some((option) => !['validate_only', 'include_recommendations'].includes(String(option))))
        return invalidParameter('Param execution_options must be an array of {validate_only, include_recommendations}', 'Invalid execution options');
      if (options.includes('validate_only')) return { status: 200, json: { success: true } };
    }
    const campaignId = this.remember('campaign', id, body);
    return { status: 200, json: { id: campaignId } };
  }

  /** `GET act_{id}/campaigns`: the account's campaigns, newest first, `filtering` on name (CONTAIN), the `fields` asked for, `limit` and an `after` cursor. */
  private listCampaigns(req: RecordedRequest, accountId: string): FakeAnswer {
    let filters: Array<{ field?: string; operator?: string; value?: unknown }> = [];
    if (req.query.filtering !== undefined) {
      try {
        filters = JSON.parse(req.query.filtering);
      } catch {
        return graphError(400, '(#100) param filtering must be a JSON array', 'OAuthException', 100);
      }
      if (!Array.isArray(filters) || filters.some((f) => typeof f?.field !== 'string' || !['CONTAIN', 'EQUAL', 'IN'].includes(String(f.operator))))
        return graphError(400, '(#100) Filtering field and operator are required', 'OAuthException', 100);
    }
    const limit = Number(req.query.limit ?? 25);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) return graphError(400, '(#100) param limit must be a positive integer', 'OAuthException', 100);
    const fields = (req.query.fields ?? 'id').split(',');
    const matching = this.created
      .filter((entry) => entry.kind === 'campaign' && entry.accountId === accountId)
      .filter((entry) =>
        filters.every(
          (f) =>
            f.field !== 'name' ||
            (f.operator === 'CONTAIN'
              ? String((entry.body as { name?: string }).name).includes(String(f.value))
              : (entry.body as { name?: string }).name === f.value),
        ),
      )
      .reverse();
    const start = req.query.after ? Number(Buffer.from(req.query.after, 'base64url').toString()) : 0;
    const page = matching.slice(start, start + limit);
    const data = page.map((entry) => {
      const all: Record<string, unknown> = { id: entry.id, name: (entry.body as { name?: string }).name, created_time: this.createdTime(entry.id) };
      return Object.fromEntries(fields.filter((f) => f in all).map((f) => [f, all[f]]));
    });
    const more = start + limit < matching.length;
    const cursor = (at: number) => Buffer.from(String(at)).toString('base64url');
    return {
      status: 200,
      json: {
        data,
        paging: {
          cursors: { before: cursor(start), after: cursor(start + page.length) },
          ...(more ? { next: `${this.url}/${VERSION}/act_${accountId}/campaigns?after=${cursor(start + page.length)}` } : {}),
        },
      },
    };
  }

  /** Meta's `created_time` (ISO 8601 with offset), from the order things were made in. */
  private createdTime(id: string): string {
    const index = this.created.findIndex((entry) => entry.id === id);
    return new Date(Date.UTC(2026, 10, 1) + index * 1000).toISOString().replace('.000Z', '+0000');
  }

  /** GET: the code exchange (`code`, `redirect_uri`) or the long-lived exchange (`grant_type=fb_exchange_token`). */
  protected override tokenEndpoint(req: RecordedRequest): FakeAnswer {
    if (req.method !== 'GET') return graphError(400, 'Unsupported post request.', 'GraphMethodException', 100);
    const q = req.query;
    if (q.client_id !== this.clientId) return graphError(400, 'Error validating application. Invalid application ID.', 'OAuthException', 101);
    if (q.client_secret !== this.clientSecret) return graphError(400, 'Error validating client secret.', 'OAuthException', 1);
    if (q.grant_type === 'fb_exchange_token') {
      if (this.tokenState(q.fb_exchange_token) !== 'valid')
        return graphError(400, 'Error validating access token: Session has expired.', 'OAuthException', 190, 463);
      return {
        status: 200,
        json: { access_token: this.issueAccessToken(`EAAG${randomBytes(12).toString('hex')}`), token_type: 'bearer', expires_in: LONG_LIVED_SECONDS },
      };
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
    const usage = {
      '1234567890': [
        { type: 'ads_management', call_count: 100, total_cputime: 30, total_time: 40, estimated_time_to_regain_access: Math.ceil(retryAfterSeconds / 60) },
      ],
    };
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
    json: {
      error: {
        message: 'Invalid parameter',
        type: 'OAuthException',
        code: 100,
        ...(subcode ? { error_subcode: subcode } : {}),
        error_user_title: userTitle,
        error_user_msg: message,
        fbtrace_id: 'AbCfake',
      },
    },
  };
}
