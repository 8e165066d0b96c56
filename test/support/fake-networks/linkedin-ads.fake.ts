import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';
import { decimals, isoExponent } from './fake-units';

const CAMPAIGN_TYPES = ['TEXT_AD', 'SPONSORED_UPDATES', 'SPONSORED_INMAILS', 'DYNAMIC'];
const OBJECTIVES = ['BRAND_AWARENESS', 'ENGAGEMENT', 'JOB_APPLICANT', 'LEAD_GENERATION', 'WEBSITE_CONVERSION', 'WEBSITE_VISIT', 'VIDEO_VIEW'];
const STATUSES = ['ACTIVE', 'PAUSED', 'DRAFT', 'ARCHIVED'];
/** LinkedIn's minimum daily campaign budget (10 USD), checked for USD accounts only. */
const MIN_DAILY_USD = 10;
/** (unconfirmed) a campaign or group name holds at most 255 bytes of UTF-8. */
const NAME_MAX_BYTES = 255;

/**
 * LinkedIn's versioned REST API as the adapter meets it: `Linkedin-Version` and
 * `X-Restli-Protocol-Version` on every call, `adAccounts/{id}`, `adCampaignGroups` and `adCampaigns`
 * (201 with the id in `x-restli-id`; GET `?q=search&search=(name:(values:List(…)))` with cursor
 * pages: `pageSize` up to 1000, `pageToken`, `metadata.nextPageToken`), and LinkedIn's error bodies.
 * The name criterion is taken as an exact match here, the stricter of its possible readings
 * (unconfirmed): an adapter that searched a part of the name would find nothing.
 *
 * Not checked, for the fake sees the query decoded (RecordedRequest has no raw query): that the
 * Rest.li structure arrives unescaped and a space as %20 rather than "+".
 */
export class LinkedinAdsFake extends FakeNetwork {
  readonly channel = 'linkedin_ads' as const;
  protected readonly oauth: OAuthShape = {
    consentPath: '/oauth/v2/authorization',
    tokenPath: '/oauth/v2/accessToken',
    accessTokenSeconds: 5_184_000,
    refreshTokenOnRefresh: 'same',
    revocation: { path: '/oauth/v2/revoke', clientAuth: 'body' },
  };
  /** `status` per ad account id (ACTIVE unless set). */
  readonly accountStatus = new Map<string, string>();
  private readonly groups = new Map<string, string>(); // group id → account id
  /** `changeAuditStamps.created.time` (epoch ms) and `status` of what was made or planted, by id. */
  private readonly stamps = new Map<string, { created: number; status: string }>();

  /** A campaign put in the account by other means (Campaign Manager, an older try), created at `createdMs`. */
  plantCampaign(accountId: string, name: string, createdMs: number, status = 'ACTIVE'): string {
    const id = this.remember('campaign', accountId, { account: `urn:li:sponsoredAccount:${accountId}`, name, status });
    this.stamps.set(id, { created: createdMs, status });
    return id;
  }

  protected route(req: RecordedRequest): FakeAnswer {
    if (!req.headers['linkedin-version'])
      return error(400, 'A version must be present. Please specify a version by adding the LinkedIn-Version header.', 'VERSION_MISSING');
    if (!/^\d{6}$/.test(req.headers['linkedin-version']))
      return error(426, `Requested version ${req.headers['linkedin-version']} is not active`, 'NONEXISTENT_VERSION');
    if (req.headers['x-restli-protocol-version'] !== '2.0.0')
      return error(400, 'Restli protocol version 2.0.0 is required for this resource', 'ILLEGAL_ARGUMENT');
    const token = this.bearer(req);
    const refused = this.checkToken(req, token);
    if (refused) return refused;

    const match = /^\/rest\/adAccounts\/(\d+)(?:\/(adCampaignGroups|adCampaigns))?$/.exec(req.path);
    if (!match) return error(404, 'Not Found', 'NOT_FOUND');
    const [, id, collection] = match;
    const account = this.reachableAccount(id, token);
    const resource = collection ?? 'adAccounts';
    if (!account)
      return {
        status: 403,
        json: {
          serviceErrorCode: 100,
          code: 'ACCESS_DENIED',
          message: `Not enough permissions to access: ${resource}.${req.method}.${req.headers['linkedin-version']}01`,
          status: 403,
        },
      };

    if (!collection && req.method === 'GET')
      return {
        status: 200,
        json: {
          id: Number(id),
          name: `Account ${id}`,
          currency: account.currency,
          status: this.accountStatus.get(id) ?? 'ACTIVE',
          type: 'BUSINESS',
          test: false,
          servingStatuses: ['RUNNABLE'],
        },
      };
    if (collection && req.method === 'GET') return this.search(req, id, collection === 'adCampaigns' ? 'campaign' : 'campaign_group');
    if (!collection || req.method !== 'POST') return error(405, 'Method not allowed', 'METHOD_NOT_ALLOWED');
    const body = (req.body ?? {}) as Record<string, any>;
    const inputErrors: Array<{ code: string; description: string; fieldPath: string }> = [];
    const invalid = (fieldPath: string, code: string, description: string) => inputErrors.push({ fieldPath, code, description });

    if (body.account !== `urn:li:sponsoredAccount:${id}`) invalid('account', 'INVALID_VALUE', 'account must be the URN of the ad account in the path');
    if (typeof body.name !== 'string' || !body.name) invalid('name', 'FIELD_REQUIRED', 'name is required');
    else if (Buffer.byteLength(body.name, 'utf8') > NAME_MAX_BYTES) invalid('name', 'INVALID_VALUE', `name must be at most ${NAME_MAX_BYTES} bytes`);
    if (!STATUSES.includes(body.status)) invalid('status', 'INVALID_VALUE', `status must be one of ${STATUSES.join(', ')}`);
    if (typeof body.runSchedule?.start !== 'number' || body.runSchedule.start < 1e12)
      invalid('runSchedule.start', 'INVALID_VALUE', 'runSchedule.start must be epoch milliseconds');
    if (body.runSchedule?.end !== undefined && !(body.runSchedule.end > body.runSchedule.start))
      invalid('runSchedule.end', 'INVALID_VALUE', 'runSchedule.end must be after runSchedule.start');

    if (collection === 'adCampaigns') {
      const groupId = /^urn:li:sponsoredCampaignGroup:(\d+)$/.exec(String(body.campaignGroup))?.[1];
      if (!groupId || this.groups.get(groupId) !== id) invalid('campaignGroup', 'INVALID_VALUE', 'campaignGroup must be a campaign group of this account');
      if (!CAMPAIGN_TYPES.includes(body.type)) invalid('type', 'INVALID_VALUE', `type must be one of ${CAMPAIGN_TYPES.join(', ')}`);
      if (!OBJECTIVES.includes(body.objectiveType)) invalid('objectiveType', 'INVALID_VALUE', `objectiveType must be one of ${OBJECTIVES.join(', ')}`);
      if (!['CPM', 'CPC', 'CPV'].includes(body.costType)) invalid('costType', 'FIELD_REQUIRED', 'costType is required');
      if (!body.locale?.country || !body.locale?.language) invalid('locale', 'FIELD_REQUIRED', 'locale is required');
      if (typeof body.politicalIntent !== 'string') invalid('politicalIntent', 'FIELD_REQUIRED', 'politicalIntent is required');
      const budgets = ['dailyBudget', 'totalBudget'].filter((field) => field in body);
      if (budgets.length !== 1) invalid('dailyBudget', 'FIELD_REQUIRED', 'one of dailyBudget or totalBudget is required');
      for (const field of budgets) {
        const money = body[field];
        if (typeof money?.amount !== 'string' || !/^\d+(\.\d+)?$/.test(money.amount))
          invalid(`${field}.amount`, 'INVALID_VALUE', 'amount must be a decimal string');
        else if (decimals(money.amount) > isoExponent(account.currency))
          invalid(`${field}.amount`, 'INVALID_VALUE', `amount has more decimals than ${account.currency} allows`);
        else if (field === 'dailyBudget' && account.currency === 'USD' && Number(money.amount) < MIN_DAILY_USD)
          invalid(`${field}.amount`, 'FIELD_VALUE_TOO_LOW', `Daily budget must be at least ${MIN_DAILY_USD} USD`);
        if (money?.currencyCode !== account.currency)
          invalid(`${field}.currencyCode`, 'INVALID_VALUE', `currencyCode must be the account currency ${account.currency}`);
      }
    }
    if (inputErrors.length)
      return {
        status: 422,
        json: {
          errorDetailType: 'com.linkedin.common.error.BadRequest',
          message: 'Multiple errors occurred during the input validation. Please refer to errorDetails for more information.',
          errorDetails: {
            inputErrors: inputErrors.map((e) => ({ description: e.description, input: { inputPath: { fieldPath: e.fieldPath } }, code: e.code })),
          },
          status: 422,
        },
      };
    const created = this.remember(collection === 'adCampaigns' ? 'campaign' : 'campaign_group', id, body);
    this.stamps.set(created, { created: Date.now(), status: body.status });
    if (collection === 'adCampaignGroups') this.groups.set(created, id);
    return { status: 201, headers: { 'x-restli-id': created, 'x-linkedin-id': created } };
  }

  /** The `search` finder of a collection: `q=search`, an optional `(name:(values:List(<name>)))`, cursor pages. */
  private search(req: RecordedRequest, accountId: string, kind: 'campaign' | 'campaign_group'): FakeAnswer {
    if (req.query.q !== 'search')
      return error(400, `Query parameter q is required and must name a finder of this resource, not ${req.query.q ?? '(none)'}`, 'ILLEGAL_ARGUMENT');
    let name: string | undefined;
    if (req.query.search !== undefined) {
      const criterion = /^\(name:\(values:List\((.+)\)\)\)$/s.exec(req.query.search);
      if (!criterion) return paramInvalid('search');
      name = criterion[1];
    }
    const pageSize = Number(req.query.pageSize ?? 10);
    if (!Number.isInteger(pageSize) || pageSize < 1) return paramInvalid('pageSize');
    if (pageSize > 1000) return error(400, 'Specified count is larger than 1000', 'ILLEGAL_ARGUMENT');
    const start = req.query.pageToken === undefined ? 0 : Number(Buffer.from(req.query.pageToken, 'base64url').toString());
    if (!Number.isInteger(start) || start < 0) return paramInvalid('pageToken');
    const urn = kind === 'campaign' ? 'sponsoredCampaign' : 'sponsoredCampaignGroup';
    const elements = this.created
      .filter((entry) => entry.kind === kind && entry.accountId === accountId && (name === undefined || (entry.body as { name?: string }).name === name))
      .map((entry) => {
        const stamp = this.stamps.get(entry.id) ?? { created: 0, status: 'ACTIVE' };
        const body = entry.body as Record<string, unknown>;
        return {
          ...body,
          id: Number(entry.id),
          status: stamp.status,
          changeAuditStamps: { created: { time: stamp.created, actor: 'urn:li:unknown:0' }, lastModified: { time: stamp.created } },
          test: false,
          $URN: `urn:li:${urn}:${entry.id}`,
        };
      });
    const end = start + pageSize;
    return {
      status: 200,
      json: { elements: elements.slice(start, end), metadata: end < elements.length ? { nextPageToken: Buffer.from(String(end)).toString('base64url') } : {} },
    };
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return why === 'expired'
      ? { status: 401, json: { serviceErrorCode: 65601, code: 'EXPIRED_ACCESS_TOKEN', message: 'The token used in the request has expired', status: 401 } }
      : { status: 401, json: { serviceErrorCode: 65600, code: 'INVALID_ACCESS_TOKEN', message: 'Invalid access token', status: 401 } };
  }

  /** LinkedIn names no delay (the day's quota resets at midnight UTC). */
  protected rateLimitedAnswer(): FakeAnswer {
    return {
      status: 429,
      json: {
        serviceErrorCode: 101,
        code: 'QUOTA_EXCEEDED',
        message: 'Resource level throttle APPLICATION DAY limit for calls to this resource is reached.',
        status: 429,
      },
    };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return { status, json: { message: status === 503 ? 'Service Unavailable' : 'Internal Server Error', status } };
  }
}

/** LinkedIn's answer to a query parameter it cannot read. */
function paramInvalid(fieldPath: string): FakeAnswer {
  return {
    status: 400,
    json: {
      errorDetailType: 'com.linkedin.common.error.BadRequest',
      message: 'Invalid param. Please see errorDetails for more information.',
      errorDetails: {
        inputErrors: [{ description: 'Invalid value for param; wrong type or other syntax error', input: { inputPath: { fieldPath } }, code: 'PARAM_INVALID' }],
      },
      status: 400,
    },
  };
}

function error(status: number, message: string, code: string): FakeAnswer {
  return { status, json: { status, code, message } };
}
