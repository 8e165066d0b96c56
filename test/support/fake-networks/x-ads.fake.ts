import { createHmac, randomBytes } from 'node:crypto';
import { NetworkSettings } from '@campaign-ops/ad-networks';
import { FakeAnswer, FakeNetwork, OAuthShape, RecordedRequest } from './fake-network';

/**
 * X Ads API v12 with OAuth 1.0a, as the adapter meets it. Every call but `oauth/access_token`
 * must carry an `Authorization: OAuth ...` header whose HMAC-SHA1 signature this fake recomputes
 * on its own (RFC 5849: method, base URL, query and form parameters, the oauth_* ones; key =
 * consumer secret & token secret), with the app's consumer key, a fresh nonce and a timestamp
 * within five minutes; otherwise 401 as X answers it.
 *
 * - Three-legged consent: `POST /oauth/request_token` (signed by the consumer, `oauth_callback` in
 *   the header) answers `oauth_token=...&oauth_token_secret=...&oauth_callback_confirmed=true`;
 *   `GET /oauth/authorize?oauth_token=...` consents at once and redirects to the callback with
 *   `oauth_token` and `oauth_verifier` (or `denied`); `POST /oauth/access_token?oauth_token&
 *   oauth_verifier` answers the user's `oauth_token` and `oauth_token_secret`.
 * - Tokens are issued in the connection's form `<token>:<secret>` (`issueAccessToken`), and
 *   `expireToken` / `denyAccount` take that form too.
 * - `POST /1.1/oauth/invalidate_token`, signed with the user's token (no parameters): the token
 *   is invalidated (`revoked` lists it as `<token>:<secret>`) and answers 401 code 89 from then on,
 *   as X documents; one it never issued fails the signature (401 code 32).
 * - `GET /12/accounts/{id}` (timezone), `GET .../funding_instruments` (one ACTIVE instrument in the
 *   account's currency), `POST .../campaigns` and `POST .../line_items` (parameters in the query
 *   string, checked as X does), `DELETE .../campaigns/{id}`. Errors `{errors: [{code, message,
 *   parameter?}], request}`; 429 with `x-account-rate-limit-reset` (epoch seconds).
 * - `GET .../campaigns` and `GET .../line_items`: X's collection parameters (`count` 1 to 1000,
 *   `cursor` only one it gave, `sort_by` `<attribute>-asc|desc` among X's sortable ones,
 *   `with_deleted`, `with_draft`, `with_total_count` exclusive with `cursor`, the `*_ids` filters
 *   of up to 200 comma-separated ids, `q` a case-insensitive prefix of the name); deleted entities
 *   only `with_deleted=true`; `{data, next_cursor, request}`. Unsorted, a list is in id order.
 */
const OBJECTIVES = [
  'APP_ENGAGEMENTS',
  'APP_INSTALLS',
  'ENGAGEMENTS',
  'FOLLOWERS',
  'LEAD_GENERATION',
  'PREROLL_VIEWS',
  'REACH',
  'VIDEO_VIEWS',
  'WEBSITE_CLICKS',
  'WEBSITE_CONVERSIONS',
];
const ENTITY_STATUSES = ['ACTIVE', 'PAUSED', 'DRAFT'];
const CAMPAIGN_PARAMS = [
  'name',
  'funding_instrument_id',
  'entity_status',
  'budget_optimization',
  'daily_budget_amount_local_micro',
  'total_budget_amount_local_micro',
  'standard_delivery',
  'frequency_cap',
  'duration_in_days',
  'purchase_order_number',
];
const LINE_ITEM_PARAMS = [
  'campaign_id',
  'name',
  'objective',
  'product_type',
  'placements',
  'bid_strategy',
  'bid_amount_local_micro',
  'entity_status',
  'start_time',
  'end_time',
  'goal',
  'pay_by',
  'ios_app_store_identifier',
  'android_app_store_identifier',
  'primary_web_event_tag',
  'advertiser_domain',
  'categories',
  'audience_expansion',
  'total_budget_amount_local_micro',
];
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const COLLECTION_PARAMS = ['count', 'cursor', 'q', 'sort_by', 'with_deleted', 'with_draft', 'with_total_count', 'funding_instrument_ids'];
const SORTABLE: Record<string, string[]> = {
  campaigns: [
    'created_at',
    'updated_at',
    'deleted',
    'name',
    'start_time',
    'end_time',
    'daily_budget_amount_local_micro',
    'total_budget_amount_local_micro',
    'standard_delivery',
  ],
  line_items: ['created_at', 'updated_at', 'deleted', 'bid_amount_local_micro'],
};

interface StoredEntity {
  id: string;
  accountId: string;
  deleted: boolean;
  createdAt: string;
  params: Record<string, string>;
}

function encode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

export class XAdsFake extends FakeNetwork {
  readonly channel = 'x_ads' as const;
  /** The base's consent page is OAuth 2's; X's `/oauth/authorize` is served by `route`. */
  protected readonly oauth: OAuthShape = { consentPath: '/oauth2-consent-not-used-by-x', tokenPath: '/oauth/access_token', issuesRefreshTokens: false };

  private readonly tokenSecrets = new Map<string, string>();
  private readonly requestTokens = new Map<string, { secret: string; callback: string; verifier?: string; used: boolean }>();
  private readonly seenNonces = new Set<string>();
  /** User tokens invalidated by `oauth/invalidate_token`: X answers them 401 code 89. */
  private readonly invalidated = new Set<string>();
  /** Requests already verified: the base carries a `twice` create out by routing the same request again, which is no replay by the caller. */
  private readonly verified = new WeakMap<RecordedRequest, { token?: string; oauth: Record<string, string> }>();
  private readonly campaigns = new Map<string, StoredEntity>();
  private readonly lineItems = new Map<string, StoredEntity>();
  private readonly cursors = new Map<string, number>();
  private lastCreatedAt = 0;
  private readonly queued: FakeAnswer[] = [];
  private refusingNextConsent = false;
  private idCounter = 0x5a000;

  override settings(overrides: Partial<NetworkSettings> = {}): NetworkSettings {
    return { ...super.settings(), oauthUrl: `${this.url}/oauth/authorize`, ...overrides };
  }

  /** A user token and secret, as a connection's `access_token` (`<token>:<secret>`); a planted value may be given in that form. */
  override issueAccessToken(planted?: string): string {
    const [token, secret] = planted?.includes(':') ? planted.split(':') : [planted ?? `at-${randomBytes(10).toString('hex')}`, randomBytes(16).toString('hex')];
    super.issueAccessToken(token);
    this.tokenSecrets.set(token, secret);
    return `${token}:${secret}`;
  }

  override expireToken(token: string): void {
    super.expireToken(token.split(':')[0]);
  }

  override denyAccount(accountId: string, token: string): void {
    super.denyAccount(accountId, token.split(':')[0]);
  }

  override denyNextConsent(): void {
    this.refusingNextConsent = true;
  }

  /** The next call is answered with this (e.g. X's classic `{"errors":[{"code":88}]}` under another status). */
  answerNext(answer: FakeAnswer): void {
    this.queued.push(answer);
  }

  protected route(req: RecordedRequest): FakeAnswer {
    const queued = this.queued.shift();
    if (queued) return queued;
    if (req.path === '/oauth/authorize' && req.method === 'GET') return this.consentPage(req);
    if (req.path === '/oauth/request_token' && req.method === 'POST') return this.requestToken(req);

    const signed = this.verifySignature(req);
    if ('status' in signed) return signed;
    if (signed.token === undefined) return this.error(401, 'UNAUTHORIZED_ACCESS', 'This request requires a user context', req);
    const state = this.tokenState(signed.token);
    const dead = state === 'expired' || this.invalidated.has(signed.token);
    if (state !== 'valid')
      return this.error(401, dead ? '89' : 'UNAUTHORIZED_ACCESS', dead ? 'Invalid or expired token.' : 'This request is not properly authenticated', req);
    if (req.path === '/1.1/oauth/invalidate_token' && req.method === 'POST') return this.invalidateToken(signed.token);

    const match = /^\/12\/accounts\/([^/]+)(\/[a-z_]+)?(?:\/([^/]+))?$/.exec(req.path);
    if (!match) return this.error(404, 'ROUTE_NOT_FOUND', `No route ${req.method} ${req.path}`, req);
    const [, rawAccountId, collection, entityId] = match;
    const accountId = decodeURIComponent(rawAccountId);
    if (!this.accounts.has(accountId)) return this.error(404, 'NOT_FOUND', 'The requested resource could not be found', req);
    const account = this.reachableAccount(accountId, signed.token);
    if (!account) return this.error(403, 'ACCOUNT_NOT_FOUND', 'The specified account does not exist or the user does not have access to it', req);

    if (!collection && req.method === 'GET')
      return this.ok(req, {
        id: accountId,
        name: `Ads ${accountId}`,
        timezone: account.timezone,
        timezone_switch_at: '2016-07-21T07:00:00Z',
        approval_status: 'ACCEPTED',
        deleted: false,
        salt: randomBytes(16).toString('hex'),
      });
    if (collection === '/funding_instruments' && req.method === 'GET' && !entityId) return this.ok(req, [this.fundingInstrument(accountId, account.currency)]);
    if (collection === '/campaigns' && req.method === 'POST' && !entityId) return this.createCampaign(req, accountId, account.currency);
    if (collection === '/campaigns' && req.method === 'GET' && !entityId) return this.list(req, accountId, 'campaigns');
    if (collection === '/line_items' && req.method === 'GET' && !entityId) return this.list(req, accountId, 'line_items');
    if (collection === '/campaigns' && req.method === 'DELETE' && entityId) return this.deleteCampaign(req, accountId, decodeURIComponent(entityId));
    if (collection === '/line_items' && req.method === 'POST' && !entityId) return this.createLineItem(req, accountId);
    return this.error(404, 'ROUTE_NOT_FOUND', `No route ${req.method} ${req.path}`, req);
  }

  /** `POST /1.1/oauth/invalidate_token`, signed with the token it invalidates: `{"access_token": ...}`; later calls with it answer 401 (89). */
  private invalidateToken(token: string): FakeAnswer {
    this.revokeGrant(token, `${token}:${this.tokenSecrets.get(token)}`);
    this.invalidated.add(token);
    return { status: 200, json: { access_token: token } };
  }

  private fundingInstrument(accountId: string, currency: string): Record<string, unknown> {
    return {
      id: `fi${accountId.slice(0, 4)}`,
      account_id: accountId,
      currency,
      type: 'CREDIT_CARD',
      entity_status: 'ACTIVE',
      able_to_fund: true,
      deleted: false,
      description: 'Visa ending in 1234',
    };
  }

  private createCampaign(req: RecordedRequest, accountId: string, currency: string): FakeAnswer {
    const params = req.query;
    const unknown = Object.keys(params).find((name) => !CAMPAIGN_PARAMS.includes(name));
    if (unknown) return this.error(400, 'INVALID_PARAMETER', `${unknown} is not a parameter of this endpoint`, req, unknown);
    if (!params.name || params.name.length > 255) return this.error(400, 'MISSING_PARAMETER', 'name is required (at most 255 characters)', req, 'name');
    if (params.funding_instrument_id !== this.fundingInstrument(accountId, currency).id)
      return this.error(400, 'INVALID_FUNDING_INSTRUMENT', 'funding_instrument_id is not a funding instrument of this account', req, 'funding_instrument_id');
    if (params.entity_status !== undefined && !ENTITY_STATUSES.includes(params.entity_status))
      return this.error(400, 'INVALID_PARAMETER', `entity_status must be one of ${ENTITY_STATUSES.join(', ')}`, req, 'entity_status');
    if (params.budget_optimization !== undefined && params.budget_optimization !== 'CAMPAIGN' && params.budget_optimization !== 'LINE_ITEM')
      return this.error(400, 'INVALID_PARAMETER', 'budget_optimization must be CAMPAIGN or LINE_ITEM', req, 'budget_optimization');
    const daily = params.daily_budget_amount_local_micro;
    const total = params.total_budget_amount_local_micro;
    if ((params.budget_optimization ?? 'CAMPAIGN') === 'CAMPAIGN' && daily === undefined)
      return this.error(
        400,
        'MISSING_PARAMETER',
        'daily_budget_amount_local_micro is required with budget_optimization CAMPAIGN',
        req,
        'daily_budget_amount_local_micro',
      );
    for (const [name, value] of [
      ['daily_budget_amount_local_micro', daily],
      ['total_budget_amount_local_micro', total],
    ] as const)
      if (value !== undefined && (!/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(Number(value))))
        return this.error(400, 'INVALID_PARAMETER', `${name} must be a positive whole number of micros`, req, name);
    if (daily !== undefined && total !== undefined && Number(daily) > Number(total))
      return this.error(400, 'INVALID_PARAMETER', 'daily budget cannot exceed the total budget', req, 'daily_budget_amount_local_micro');
    const stored = this.store(this.campaigns, accountId, params);
    this.created.push({ id: stored.id, accountId, kind: 'campaign', body: { ...params } });
    return this.ok(req, { ...this.campaignView(stored), currency });
  }

  private createLineItem(req: RecordedRequest, accountId: string): FakeAnswer {
    const params = req.query;
    const unknown = Object.keys(params).find((name) => !LINE_ITEM_PARAMS.includes(name));
    if (unknown) return this.error(400, 'INVALID_PARAMETER', `${unknown} is not a parameter of this endpoint`, req, unknown);
    const campaign = this.campaigns.get(params.campaign_id ?? '');
    if (!campaign || campaign.deleted || campaign.accountId !== accountId)
      return this.error(404, 'CAMPAIGN_NOT_FOUND', 'campaign_id is not a campaign of this account', req, 'campaign_id');
    if (!OBJECTIVES.includes(params.objective ?? ''))
      return this.error(400, 'INVALID_PARAMETER', `objective must be one of ${OBJECTIVES.join(', ')}`, req, 'objective');
    if (params.product_type !== 'PROMOTED_TWEETS' && params.product_type !== 'PROMOTED_ACCOUNT')
      return this.error(400, 'INVALID_PARAMETER', 'product_type must be PROMOTED_TWEETS or PROMOTED_ACCOUNT', req, 'product_type');
    if (!params.placements) return this.error(400, 'MISSING_PARAMETER', 'placements is required', req, 'placements');
    if (params.entity_status !== undefined && !ENTITY_STATUSES.includes(params.entity_status))
      return this.error(400, 'INVALID_PARAMETER', `entity_status must be one of ${ENTITY_STATUSES.join(', ')}`, req, 'entity_status');
    for (const name of ['start_time', 'end_time'] as const)
      if (params[name] !== undefined && !ISO_8601.test(params[name]))
        return this.error(400, 'INVALID_PARAMETER', `${name} must be an ISO 8601 date-time`, req, name);
    if (params.start_time && params.end_time && Date.parse(params.end_time) <= Date.parse(params.start_time))
      return this.error(400, 'INVALID_PARAMETER', 'end_time must be after start_time', req, 'end_time');
    if (params.objective === 'APP_INSTALLS' && !params.ios_app_store_identifier && !params.android_app_store_identifier)
      return this.error(400, 'MISSING_PARAMETER', 'An app store identifier is required for the APP_INSTALLS objective', req, 'android_app_store_identifier');
    const stored = this.store(this.lineItems, accountId, params);
    this.created.push({ id: stored.id, accountId, kind: 'line_item', body: { ...params } });
    return this.ok(req, this.lineItemView(stored));
  }

  /** Campaigns made elsewhere (X's interface, another tool), as many as a test needs, without a call each. */
  plantCampaigns(accountId: string, names: string[]): void {
    for (const name of names) this.store(this.campaigns, accountId, { name, entity_status: 'ACTIVE' });
  }

  /** Keeps an entity; ids and creation times strictly increase, as X's do between two creates. */
  private store(into: Map<string, StoredEntity>, accountId: string, params: Record<string, string>): StoredEntity {
    this.lastCreatedAt = Math.max(Date.now(), this.lastCreatedAt + 1);
    const stored = {
      id: (this.idCounter++).toString(36),
      accountId,
      deleted: false,
      createdAt: new Date(this.lastCreatedAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      params: { ...params },
    };
    into.set(stored.id, stored);
    return stored;
  }

  private campaignView(campaign: StoredEntity): Record<string, unknown> {
    const { daily_budget_amount_local_micro: daily, total_budget_amount_local_micro: total, ...rest } = campaign.params;
    return {
      ...rest,
      id: campaign.id,
      account_id: campaign.accountId,
      daily_budget_amount_local_micro: daily === undefined ? null : Number(daily),
      total_budget_amount_local_micro: total === undefined ? null : Number(total),
      servable: false,
      deleted: campaign.deleted,
      created_at: campaign.createdAt,
      updated_at: campaign.createdAt,
    };
  }

  private lineItemView(lineItem: StoredEntity): Record<string, unknown> {
    return {
      ...lineItem.params,
      id: lineItem.id,
      account_id: lineItem.accountId,
      deleted: lineItem.deleted,
      created_at: lineItem.createdAt,
      updated_at: lineItem.createdAt,
    };
  }

  /** `GET .../campaigns` or `.../line_items`, with X's collection parameters. */
  private list(req: RecordedRequest, accountId: string, collection: 'campaigns' | 'line_items'): FakeAnswer {
    const params = req.query;
    const ids = collection === 'campaigns' ? ['campaign_ids'] : ['line_item_ids', 'campaign_ids'];
    const unknown = Object.keys(params).find((name) => !COLLECTION_PARAMS.includes(name) && !ids.includes(name));
    if (unknown) return this.error(400, 'INVALID_PARAMETER', `${unknown} is not a parameter of this endpoint`, req, unknown);
    const count = params.count === undefined ? 200 : Number(params.count);
    if (!Number.isInteger(count) || count < 1 || count > 1000) return this.error(400, 'INVALID_PARAMETER', 'count must be between 1 and 1000', req, 'count');
    for (const flag of ['with_deleted', 'with_draft', 'with_total_count'])
      if (params[flag] !== undefined && params[flag] !== 'true' && params[flag] !== 'false')
        return this.error(400, 'INVALID_PARAMETER', `${flag} must be true or false`, req, flag);
    if (params.with_total_count === 'true' && params.cursor !== undefined)
      return this.error(400, 'INVALID_PARAMETER', 'with_total_count and cursor are exclusive', req, 'with_total_count');
    const sort = params.sort_by === undefined ? null : /^([a-z_]+)-(asc|desc)$/.exec(params.sort_by);
    if (params.sort_by !== undefined && (!sort || !SORTABLE[collection].includes(sort[1])))
      return this.error(400, 'INVALID_PARAMETER', `sort_by must be one of ${SORTABLE[collection].join(', ')} with -asc or -desc`, req, 'sort_by');
    const filters: Record<string, string[]> = {};
    for (const name of [...ids, 'funding_instrument_ids']) {
      if (params[name] === undefined) continue;
      filters[name] = params[name].split(',');
      if (filters[name].length > 200 || filters[name].some((id) => !id))
        return this.error(400, 'INVALID_PARAMETER', `${name} takes 1 to 200 comma-separated ids`, req, name);
    }
    let start = 0;
    if (params.cursor !== undefined) {
      const known = this.cursors.get(params.cursor);
      if (known === undefined) return this.error(400, 'INVALID_PARAMETER', 'cursor is not valid', req, 'cursor');
      start = known;
    }
    const entities = [...(collection === 'campaigns' ? this.campaigns : this.lineItems).values()].filter(
      (entity) =>
        entity.accountId === accountId &&
        (params.with_deleted === 'true' || !entity.deleted) &&
        (!filters.campaign_ids || filters.campaign_ids.includes(collection === 'campaigns' ? entity.id : entity.params.campaign_id)) &&
        (!filters.line_item_ids || filters.line_item_ids.includes(entity.id)) &&
        (!filters.funding_instrument_ids || filters.funding_instrument_ids.includes(entity.params.funding_instrument_id)) &&
        (params.q === undefined || (entity.params.name ?? '').toLowerCase().startsWith(params.q.toLowerCase())),
    );
    const views = entities.map((entity) => (collection === 'campaigns' ? this.campaignView(entity) : this.lineItemView(entity)));
    if (sort) {
      const [, attribute, direction] = sort;
      const value = (view: Record<string, unknown>) => view[attribute] as string | number | boolean | null;
      views.sort((a, b) => {
        const [x, y] = [value(a), value(b)];
        const order = x === y ? 0 : x === null ? 1 : y === null ? -1 : x < y ? -1 : 1;
        return direction === 'asc' ? order : -order;
      });
    }
    const page = views.slice(start, start + count);
    let nextCursor: string | null = null;
    if (start + page.length < views.length) {
      nextCursor = randomBytes(6).toString('hex');
      this.cursors.set(nextCursor, start + page.length);
    }
    return {
      status: 200,
      json: {
        request: { params: req.query },
        data: page,
        next_cursor: nextCursor,
        ...(params.with_total_count === 'true' ? { total_count: views.length } : {}),
      },
    };
  }

  private deleteCampaign(req: RecordedRequest, accountId: string, id: string): FakeAnswer {
    const campaign = this.campaigns.get(id);
    if (!campaign || campaign.accountId !== accountId) return this.error(404, 'CAMPAIGN_NOT_FOUND', 'The campaign does not exist', req);
    campaign.deleted = true;
    this.created.push({ id, accountId, kind: 'campaign_deleted', body: null });
    return this.ok(req, { id, deleted: true });
  }

  // ---- OAuth 1.0a ----

  private requestToken(req: RecordedRequest): FakeAnswer {
    const signed = this.verifySignature(req);
    if ('status' in signed) return signed;
    const callback = signed.oauth.oauth_callback;
    if (!callback) return this.error(400, 'MISSING_PARAMETER', 'oauth_callback is required', req, 'oauth_callback');
    const token = `rq-${randomBytes(12).toString('hex')}`;
    const secret = randomBytes(16).toString('hex');
    this.requestTokens.set(token, { secret, callback, used: false });
    return { status: 200, text: `oauth_token=${token}&oauth_token_secret=${secret}&oauth_callback_confirmed=true`, contentType: 'text/html;charset=utf-8' };
  }

  private consentPage(req: RecordedRequest): FakeAnswer {
    const pending = this.requestTokens.get(req.query.oauth_token ?? '');
    if (!pending || pending.used)
      return { status: 400, text: 'This page is no longer valid. The request token is unknown or was used.', contentType: 'text/html' };
    const back = new URL(pending.callback);
    if (this.refusingNextConsent) {
      this.refusingNextConsent = false;
      back.searchParams.set('denied', req.query.oauth_token);
    } else {
      pending.verifier = randomBytes(16).toString('hex');
      back.searchParams.set('oauth_token', req.query.oauth_token);
      back.searchParams.set('oauth_verifier', pending.verifier);
    }
    return { status: 302, headers: { location: back.toString() } };
  }

  /** `POST /oauth/access_token?oauth_token&oauth_verifier` (X documents it as needing no signature). */
  protected override tokenEndpoint(req: RecordedRequest): FakeAnswer {
    if (req.method !== 'POST') return { status: 405, text: 'POST only' };
    if (req.headers.authorization) {
      const signed = this.verifySignature(req);
      if ('status' in signed) return signed;
    }
    const form = { ...req.query, ...((typeof req.body === 'object' && req.body) || {}) } as Record<string, string>;
    const pending = this.requestTokens.get(form.oauth_token ?? '');
    if (!pending || pending.used || !pending.verifier || pending.verifier !== form.oauth_verifier)
      return { status: 401, text: 'Error processing your OAuth request: Invalid oauth_verifier parameter', contentType: 'text/html' };
    pending.used = true;
    const [token, secret] = this.issueAccessToken().split(':');
    return {
      status: 200,
      text: `oauth_token=${token}&oauth_token_secret=${secret}&user_id=6253282&screen_name=acme_ads`,
      contentType: 'text/html;charset=utf-8',
    };
  }

  /** RFC 5849 §3.2: the header's parameters, the consumer, the timestamp, the nonce and the HMAC-SHA1 signature. */
  private verifySignature(req: RecordedRequest): FakeAnswer | { token?: string; oauth: Record<string, string> } {
    const known = this.verified.get(req);
    if (known) return known;
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('OAuth ')) return this.error(401, 'UNAUTHORIZED_ACCESS', 'This request is not properly authenticated', req);
    const oauth: Record<string, string> = {};
    for (const part of header.slice(6).split(',')) {
      const pair = /^\s*([^=\s]+)="([^"]*)"\s*$/.exec(part);
      if (!pair) return this.error(401, 'UNAUTHORIZED_ACCESS', 'Malformed OAuth header', req);
      oauth[decodeURIComponent(pair[1])] = decodeURIComponent(pair[2]);
    }
    if (oauth.oauth_consumer_key !== this.clientId) return this.error(401, '32', 'Could not authenticate you.', req);
    if (oauth.oauth_signature_method !== 'HMAC-SHA1' || (oauth.oauth_version !== undefined && oauth.oauth_version !== '1.0'))
      return this.error(401, '32', 'Could not authenticate you.', req);
    if (!oauth.oauth_nonce || this.seenNonces.has(oauth.oauth_nonce)) return this.error(401, '32', 'Could not authenticate you (nonce reused).', req);
    if (Math.abs(Number(oauth.oauth_timestamp) - Date.now() / 1000) > 300) return this.error(401, '135', 'Timestamp out of bounds.', req);
    const token = oauth.oauth_token;
    const tokenSecret = token === undefined ? '' : (this.tokenSecrets.get(token) ?? this.requestTokens.get(token)?.secret ?? '');
    const params: Array<[string, string]> = Object.entries(req.query);
    if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded') && typeof req.body === 'object' && req.body)
      params.push(...Object.entries(req.body as Record<string, string>));
    for (const [name, value] of Object.entries(oauth)) if (name !== 'oauth_signature' && name !== 'realm') params.push([name, value]);
    const normalized = params
      .map(([k, v]) => [encode(k), encode(v)])
      .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const base = `${req.method}&${encode(this.url + req.path)}&${encode(normalized)}`;
    const expected = createHmac('sha1', `${encode(this.clientSecret)}&${encode(tokenSecret)}`)
      .update(base)
      .digest('base64');
    if (expected !== oauth.oauth_signature) return this.error(401, '32', 'Could not authenticate you.', req);
    this.seenNonces.add(oauth.oauth_nonce);
    this.verified.set(req, { token, oauth });
    return { token, oauth };
  }

  private ok(req: RecordedRequest, data: unknown): FakeAnswer {
    return { status: 200, json: { data, request: { params: req.query } } };
  }

  private error(status: number, code: string, message: string, req: RecordedRequest, parameter?: string): FakeAnswer {
    const numeric = /^\d+$/.test(code) ? Number(code) : code;
    return { status, json: { errors: [{ code: numeric, message, ...(parameter ? { parameter } : {}) }], request: { params: req.query } } };
  }

  protected tokenRefusedAnswer(req: RecordedRequest): FakeAnswer {
    return this.error(401, '89', 'Invalid or expired token.', req);
  }

  protected rateLimitedAnswer(req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    const reset = Math.floor(Date.now() / 1000) + retryAfterSeconds;
    return {
      ...this.error(429, 'TOO_MANY_REQUESTS', 'Rate limit exceeded', req),
      headers: { 'x-account-rate-limit-limit': '2000', 'x-account-rate-limit-remaining': '0', 'x-account-rate-limit-reset': String(reset) },
    };
  }

  protected serverErrorAnswer(req: RecordedRequest, status: number): FakeAnswer {
    return this.error(status, status === 503 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR', 'Service unavailable, try again later', req);
  }
}
