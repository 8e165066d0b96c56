import { NetworkSettings } from '@campaign-ops/ad-networks';
import { FakeAnswer, FakeNetwork, FakeNetworkOptions, OAuthShape, RecordedRequest } from './fake-network';
import { minorUnitMicros } from './fake-units';

const VERSION = 'v23';
const FAILURE_TYPE = `type.googleapis.com/google.ads.googleads.${VERSION}.errors.GoogleAdsFailure`;
const DATE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
/** Rows per page of googleAds:search (Google's is 10,000; smaller here so paging is exercised). */
const PAGE_SIZE = 50;
const BIDDING = ['maximizeConversions', 'targetSpend', 'manualCpm', 'manualCpc', 'targetCpa', 'maximizeConversionValue', 'targetImpressionShare'];

/**
 * Google Ads REST as the adapter meets it: `googleAds:search` (the customer, campaigns by name,
 * budgets by name), `campaignBudgets:mutate` and `campaigns:mutate` (budget names and campaign
 * names unique per account: DUPLICATE_NAME, DUPLICATE_CAMPAIGN_NAME), and `googleAds:mutate` with
 * `validateOnly` for the dry run, with Google's error envelope for every refusal.
 */
export class GoogleAdsFake extends FakeNetwork {
  readonly channel = 'google_ads' as const;
  protected readonly oauth: OAuthShape = {
    consentPath: '/o/oauth2/v2/auth',
    tokenPath: '/token',
    accessTokenSeconds: 3599,
    refreshTokenOnRefresh: 'none',
    revocation: { path: '/revoke', clientAuth: 'none' },
  };
  readonly developerToken = 'fake-developer-token';
  private readonly budgets = new Map<string, { customerId: string; period: string }>();

  constructor(options?: FakeNetworkOptions) {
    super(options);
  }

  override settings(overrides: Partial<NetworkSettings> = {}): NetworkSettings {
    return super.settings({ developerToken: this.developerToken, ...overrides });
  }

  protected route(req: RecordedRequest): FakeAnswer {
    const match = new RegExp(`^/${VERSION}/customers/(\\d+)/(googleAds:search|googleAds:mutate|campaignBudgets:mutate|campaigns:mutate)$`).exec(req.path);
    if (!match || req.method !== 'POST') return failure(404, 'NOT_FOUND', `The requested URL ${req.path} was not found on this server.`, []);
    if (!req.headers['developer-token'])
      return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ authenticationError: 'DEVELOPER_TOKEN_PARAMETER_MISSING' }]);
    if (req.headers['developer-token'] !== this.developerToken)
      return failure(401, 'UNAUTHENTICATED', 'Request is missing required authentication credential.', [{ authenticationError: 'DEVELOPER_TOKEN_INVALID' }]);
    const token = this.bearer(req);
    const refused = this.checkToken(req, token);
    if (refused) return refused;
    const [, customerId, method] = match;
    const account = this.reachableAccount(customerId, token);
    if (!account)
      return failure(
        403,
        'PERMISSION_DENIED',
        'The caller does not have permission',
        [{ authorizationError: 'USER_PERMISSION_DENIED' }],
        "User doesn't have permission to access customer. Note: If you're accessing a client customer, the manager's customer id must be set in the 'login-customer-id' header.",
      );
    const body = req.body as {
      query?: string;
      operations?: Array<{ create?: Record<string, unknown> }>;
      mutateOperations?: Array<Record<string, { create?: Record<string, unknown> }>>;
      validateOnly?: boolean;
      pageToken?: string;
    };

    if (method === 'googleAds:search') return this.search(customerId, account, body);
    if (method === 'googleAds:mutate') return this.mutateAll(customerId, account, body);
    const create = body?.operations?.length === 1 ? body.operations[0].create : undefined;
    if (!create) return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ mutateError: 'OPERATION_NOT_PERMITTED_FOR_RESOURCE' }]);

    if (method === 'campaignBudgets:mutate') {
      const budgetRefused = this.budgetRefusal(customerId, account.currency, create);
      if (budgetRefused) return budgetRefused;
      if (body.validateOnly === true) return { status: 200, json: {} };
      return { status: 200, json: { results: [{ resourceName: this.makeBudget(customerId, create) }] } };
    }
    // campaigns:mutate
    const campaignRefused = this.campaignRefusal(customerId, create, this.budgets.get(String(create.campaignBudget)));
    if (campaignRefused) return campaignRefused;
    if (body.validateOnly === true) return { status: 200, json: {} };
    const id = this.remember('campaign', customerId, create);
    return { status: 200, json: { results: [{ resourceName: `customers/${customerId}/campaigns/${id}` }] } };
  }

  /**
   * GAQL, as much of it as the adapter asks: the customer; campaigns whose name is LIKE a pattern
   * (`%` any run, `_` one character) and not REMOVED; budgets whose name equals a string. Pages of
   * `PAGE_SIZE` with `nextPageToken`.
   */
  private search(customerId: string, account: { currency: string; timezone: string }, body: { query?: string; pageToken?: string }): FakeAnswer {
    const query = typeof body?.query === 'string' ? body.query : '';
    if (/FROM\s+customer\b/i.test(query)) {
      return {
        status: 200,
        json: {
          results: [{ customer: { resourceName: `customers/${customerId}`, id: customerId, currencyCode: account.currency, timeZone: account.timezone } }],
          fieldMask: 'customer.id,customer.currencyCode,customer.timeZone',
        },
      };
    }
    const campaigns =
      /^SELECT\s+campaign\.id,\s*campaign\.name\b.*\bFROM\s+campaign\s+WHERE\s+campaign\.name\s+LIKE\s+'((?:[^'\\]|\\.)*)'\s+AND\s+campaign\.status\s+!=\s+'REMOVED'/is.exec(
        query,
      );
    if (campaigns) {
      const like = likeRegex(unquote(campaigns[1]));
      const rows = this.created
        .filter((entry) => entry.kind === 'campaign' && entry.accountId === customerId && like.test(String((entry.body as { name?: string }).name)))
        .map((entry) => ({
          campaign: { resourceName: `customers/${customerId}/campaigns/${entry.id}`, id: entry.id, name: (entry.body as { name?: string }).name },
        }));
      return this.page(rows, body.pageToken, 'campaign.resourceName,campaign.id,campaign.name');
    }
    const budgets =
      /^SELECT\s+campaign_budget\.resource_name\b.*\bFROM\s+campaign_budget\s+WHERE\s+campaign_budget\.name\s+=\s+'((?:[^'\\]|\\.)*)'\s+AND\s+campaign_budget\.status\s+!=\s+'REMOVED'/is.exec(
        query,
      );
    if (budgets) {
      const name = unquote(budgets[1]);
      const rows = this.created
        .filter((entry) => entry.kind === 'campaign_budget' && entry.accountId === customerId && (entry.body as { name?: string }).name === name)
        .map((entry) => ({ campaignBudget: { resourceName: `customers/${customerId}/campaignBudgets/${entry.id}`, name } }));
      return this.page(rows, body.pageToken, 'campaignBudget.resourceName,campaignBudget.name');
    }
    return failure(
      400,
      'INVALID_ARGUMENT',
      'Request contains an invalid argument.',
      [{ queryError: 'UNRECOGNIZED_FIELD' }],
      `The fake does not know this query: ${query}`,
    );
  }

  private page(rows: unknown[], pageToken: string | undefined, fieldMask: string): FakeAnswer {
    const start = pageToken ? Number(Buffer.from(pageToken, 'base64url').toString()) : 0;
    if (!Number.isInteger(start) || start < 0)
      return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ requestError: 'INVALID_PAGE_TOKEN' }]);
    const end = start + PAGE_SIZE;
    return {
      status: 200,
      json: { results: rows.slice(start, end), fieldMask, ...(end < rows.length ? { nextPageToken: Buffer.from(String(end)).toString('base64url') } : {}) },
    };
  }

  /**
   * `googleAds:mutate`, the way the dry run uses it: a budget with the temporary resource name
   * `customers/{id}/campaignBudgets/-1` and a campaign that refers to it, each checked as its own
   * mutate would be. The fake takes it only with `validateOnly` (answering `{}`, making nothing).
   */
  private mutateAll(
    customerId: string,
    account: { currency: string },
    body: { mutateOperations?: Array<Record<string, { create?: Record<string, unknown> }>>; validateOnly?: boolean },
  ): FakeAnswer {
    if (body.validateOnly !== true)
      return failure(400, 'INVALID_ARGUMENT', 'The fake takes googleAds:mutate with validateOnly only.', [
        { mutateError: 'OPERATION_NOT_PERMITTED_FOR_RESOURCE' },
      ]);
    const temporary = new Map<string, { customerId: string; period: string }>();
    for (const operation of body.mutateOperations ?? []) {
      const [kind] = Object.keys(operation);
      const create = operation[kind]?.create;
      if (!create || Object.keys(operation).length !== 1)
        return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ mutateError: 'OPERATION_NOT_PERMITTED_FOR_RESOURCE' }]);
      if (kind === 'campaignBudgetOperation') {
        const refused = this.budgetRefusal(customerId, account.currency, create);
        if (refused) return refused;
        if (!/^customers\/\d+\/campaignBudgets\/-\d+$/.test(String(create.resourceName)) || !String(create.resourceName).startsWith(`customers/${customerId}/`))
          return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ resourceNameError: 'MALFORMED' }]);
        temporary.set(String(create.resourceName), { customerId, period: String(create.period) });
      } else if (kind === 'campaignOperation') {
        const refused = this.campaignRefusal(
          customerId,
          create,
          temporary.get(String(create.campaignBudget)) ?? this.budgets.get(String(create.campaignBudget)),
        );
        if (refused) return refused;
      } else {
        return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ mutateError: 'OPERATION_NOT_PERMITTED_FOR_RESOURCE' }]);
      }
    }
    if (!body.mutateOperations?.length) return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    return { status: 200, json: {} };
  }

  private budgetRefusal(customerId: string, currency: string, create: Record<string, unknown>): FakeAnswer | null {
    const amount = create.period === 'CUSTOM_PERIOD' ? create.totalAmountMicros : create.amountMicros;
    if (typeof create.name !== 'string' || !create.name)
      return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    if (create.period !== 'DAILY' && create.period !== 'CUSTOM_PERIOD')
      return failure(400, 'INVALID_ARGUMENT', 'Invalid budget period.', [{ campaignBudgetError: 'INVALID_PERIOD' }]);
    if (typeof amount !== 'string' || !/^\d+$/.test(amount))
      return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    if (BigInt(amount) % BigInt(minorUnitMicros(currency)) !== 0n)
      return failure(
        400,
        'INVALID_ARGUMENT',
        'Request contains an invalid argument.',
        [{ campaignBudgetError: 'NON_MULTIPLE_OF_MINIMUM_CURRENCY_UNIT' }],
        'The budget amount must be a multiple of the minimum currency unit.',
      );
    if (create.deliveryMethod !== 'STANDARD')
      return failure(400, 'INVALID_ARGUMENT', 'Invalid delivery method.', [{ campaignBudgetError: 'INVALID_DELIVERY_METHOD' }]);
    // Budget names are unique among an account's budgets that are not removed.
    if (this.created.some((c) => c.kind === 'campaign_budget' && c.accountId === customerId && (c.body as { name?: string }).name === create.name))
      return failure(
        400,
        'INVALID_ARGUMENT',
        'Request contains an invalid argument.',
        [{ campaignBudgetError: 'DUPLICATE_NAME' }],
        'Budget name already in use.',
      );
    return null;
  }

  private makeBudget(customerId: string, create: Record<string, unknown>): string {
    const id = this.remember('campaign_budget', customerId, create);
    const resourceName = `customers/${customerId}/campaignBudgets/${id}`;
    this.budgets.set(resourceName, { customerId, period: String(create.period) });
    return resourceName;
  }

  private campaignRefusal(customerId: string, create: Record<string, unknown>, budget: { customerId: string; period: string } | undefined): FakeAnswer | null {
    if (!budget || budget.customerId !== customerId)
      return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ campaignError: 'CAMPAIGN_BUDGET_NOT_FOUND' }]);
    if (typeof create.name !== 'string' || !create.name)
      return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    if (!['SEARCH', 'DISPLAY', 'MULTI_CHANNEL', 'VIDEO', 'SHOPPING', 'PERFORMANCE_MAX', 'DEMAND_GEN'].includes(String(create.advertisingChannelType)))
      return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    if (BIDDING.filter((name) => name in create).length !== 1)
      return failure(400, 'INVALID_ARGUMENT', 'A bidding strategy must be set.', [{ biddingError: 'BIDDING_STRATEGY_NOT_SUPPORTED' }]);
    if (!['PAUSED', 'ENABLED'].includes(String(create.status))) return failure(400, 'INVALID_ARGUMENT', 'Invalid status.', [{ fieldError: 'REQUIRED' }]);
    for (const field of ['startDateTime', 'endDateTime'])
      if (field in create && !DATE_TIME.test(String(create[field])))
        return failure(400, 'INVALID_ARGUMENT', "The string date time's format should be yyyy-mm-dd hh:mm:ss.", [
          { dateError: 'INVALID_STRING_DATE_TIME_SECONDS' },
        ]);
    if (!create.containsEuPoliticalAdvertising)
      return failure(
        400,
        'INVALID_ARGUMENT',
        'The required field was not present.',
        [{ fieldError: 'REQUIRED' }],
        'containsEuPoliticalAdvertising is required.',
      );
    if (budget.period === 'CUSTOM_PERIOD' && !create.endDateTime)
      return failure(400, 'INVALID_ARGUMENT', 'A custom-period budget needs an end date.', [
        { campaignBudgetError: 'CUSTOM_BUDGET_ON_CAMPAIGN_WITHOUT_END_DATE' },
      ]);
    if (this.created.some((c) => c.kind === 'campaign' && c.accountId === customerId && (c.body as { name?: string }).name === create.name))
      return failure(400, 'INVALID_ARGUMENT', 'Campaign name already used.', [{ campaignError: 'DUPLICATE_CAMPAIGN_NAME' }]);
    return null;
  }

  /** Google would refuse a second campaign of the name: the second of `twice` is made past that check, as two racing creates could leave them. */
  protected override async makeAgain(_req: RecordedRequest, made: GoogleAdsFake['created'][number]): Promise<void> {
    this.remember(made.kind, made.accountId, made.body);
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return failure(
      401,
      'UNAUTHENTICATED',
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      [{ authenticationError: why === 'expired' ? 'OAUTH_TOKEN_EXPIRED' : 'OAUTH_TOKEN_INVALID' }],
    );
  }

  protected rateLimitedAnswer(req: RecordedRequest, retryAfterSeconds: number): FakeAnswer {
    if (req.path === this.oauth.tokenPath) return { status: 429, json: { error: 'rate_limit_exceeded', error_description: 'Rate limit exceeded' } };
    return {
      status: 429,
      json: {
        error: {
          code: 429,
          message: 'Resource has been exhausted (e.g. check quota).',
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': FAILURE_TYPE,
              errors: [
                {
                  errorCode: { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' },
                  message: 'Too many requests. Retry in 30 seconds.',
                  details: {
                    quotaErrorDetails: { rateScope: 'DEVELOPER', rateName: 'Number of operations for basic access', retryDelay: `${retryAfterSeconds}s` },
                  },
                },
              ],
              requestId: 'fake-request',
            },
          ],
        },
      },
    };
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return failure(
      status,
      status === 503 ? 'UNAVAILABLE' : 'INTERNAL',
      status === 503 ? 'The service is currently unavailable.' : 'Internal error encountered.',
      [{ internalError: 'INTERNAL_ERROR' }],
    );
  }
}

function failure(status: number, rpcStatus: string, message: string, errorCodes: Array<Record<string, string>>, detailMessage?: string): FakeAnswer {
  return {
    status,
    json: {
      error: {
        code: status,
        message,
        status: rpcStatus,
        details: errorCodes.length
          ? [{ '@type': FAILURE_TYPE, errors: errorCodes.map((errorCode) => ({ errorCode, message: detailMessage ?? message })), requestId: 'fake-request' }]
          : [],
      },
    },
  };
}

/** A GAQL string literal's content, its backslash escapes undone. */
function unquote(literal: string): string {
  return literal.replace(/\\(.)/g, '$1');
}

/** GAQL LIKE: `%` any run of characters, `_` exactly one; `[x]` the character x itself. */
function likeRegex(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '[' && pattern[i + 2] === ']') {
      source += pattern[i + 1].replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      i += 2;
    } else if (c === '%') source += '.*';
    else if (c === '_') source += '.';
    else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}
