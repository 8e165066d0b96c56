import { NetworkSettings } from '@campaign-ops/ad-networks';
import { FakeAnswer, FakeNetwork, FakeNetworkOptions, OAuthShape, RecordedRequest } from './fake-network';
import { minorUnitMicros } from './fake-units';

const VERSION = 'v23';
const FAILURE_TYPE = `type.googleapis.com/google.ads.googleads.${VERSION}.errors.GoogleAdsFailure`;
const DATE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const BIDDING = ['maximizeConversions', 'targetSpend', 'manualCpm', 'manualCpc', 'targetCpa', 'maximizeConversionValue', 'targetImpressionShare'];

/**
 * Google Ads REST as the adapter meets it: `googleAds:search` on the customer, then
 * `campaignBudgets:mutate` and `campaigns:mutate`, with Google's error envelope for every refusal.
 */
export class GoogleAdsFake extends FakeNetwork {
  readonly channel = 'google_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: '/o/oauth2/v2/auth', tokenPath: '/token', accessTokenSeconds: 3599, refreshTokenOnRefresh: 'none' };
  readonly developerToken = 'fake-developer-token';
  private readonly budgets = new Map<string, { customerId: string; period: string }>();

  constructor(options?: FakeNetworkOptions) {
    super(options);
  }

  override settings(overrides: Partial<NetworkSettings> = {}): NetworkSettings {
    return super.settings({ developerToken: this.developerToken, ...overrides });
  }

  protected route(req: RecordedRequest): FakeAnswer {
    const match = new RegExp(`^/${VERSION}/customers/(\\d+)/(googleAds:search|campaignBudgets:mutate|campaigns:mutate)$`).exec(req.path);
    if (!match || req.method !== 'POST') return failure(404, 'NOT_FOUND', `The requested URL ${req.path} was not found on this server.`, []);
    if (!req.headers['developer-token']) return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ authenticationError: 'DEVELOPER_TOKEN_PARAMETER_MISSING' }]);
    if (req.headers['developer-token'] !== this.developerToken) return failure(401, 'UNAUTHENTICATED', 'Request is missing required authentication credential.', [{ authenticationError: 'DEVELOPER_TOKEN_INVALID' }]);
    const token = this.bearer(req);
    const refused = this.checkToken(req, token);
    if (refused) return refused;
    const [, customerId, method] = match;
    const account = this.reachableAccount(customerId, token);
    if (!account)
      return failure(403, 'PERMISSION_DENIED', "The caller does not have permission", [
        { authorizationError: 'USER_PERMISSION_DENIED' },
      ], "User doesn't have permission to access customer. Note: If you're accessing a client customer, the manager's customer id must be set in the 'login-customer-id' header.");
    const body = req.body as { query?: string; operations?: Array<{ create?: Record<string, unknown> }> };

    if (method === 'googleAds:search') {
      if (typeof body?.query !== 'string' || !/FROM\s+customer\b/i.test(body.query)) return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ queryError: 'UNEXPECTED_END_OF_QUERY' }]);
      return {
        status: 200,
        json: {
          results: [{ customer: { resourceName: `customers/${customerId}`, id: customerId, currencyCode: account.currency, timeZone: account.timezone } }],
          fieldMask: 'customer.id,customer.currencyCode,customer.timeZone',
        },
      };
    }
    const create = body?.operations?.length === 1 ? body.operations[0].create : undefined;
    if (!create) return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ mutateError: 'OPERATION_NOT_PERMITTED_FOR_RESOURCE' }]);

    if (method === 'campaignBudgets:mutate') {
      const amount = create.period === 'CUSTOM_PERIOD' ? create.totalAmountMicros : create.amountMicros;
      if (typeof create.name !== 'string' || !create.name) return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
      if (create.period !== 'DAILY' && create.period !== 'CUSTOM_PERIOD') return failure(400, 'INVALID_ARGUMENT', 'Invalid budget period.', [{ campaignBudgetError: 'INVALID_PERIOD' }]);
      if (typeof amount !== 'string' || !/^\d+$/.test(amount)) return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
      if (BigInt(amount) % BigInt(minorUnitMicros(account.currency)) !== 0n)
        return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ campaignBudgetError: 'NON_MULTIPLE_OF_MINIMUM_CURRENCY_UNIT' }], 'The budget amount must be a multiple of the minimum currency unit.');
      if (create.deliveryMethod !== 'STANDARD') return failure(400, 'INVALID_ARGUMENT', 'Invalid delivery method.', [{ campaignBudgetError: 'INVALID_DELIVERY_METHOD' }]);
      const id = this.remember('campaign_budget', customerId, create);
      const resourceName = `customers/${customerId}/campaignBudgets/${id}`;
      this.budgets.set(resourceName, { customerId, period: create.period });
      return { status: 200, json: { results: [{ resourceName }] } };
    }

    // campaigns:mutate
    const budget = typeof create.campaignBudget === 'string' ? this.budgets.get(create.campaignBudget) : undefined;
    if (!budget || budget.customerId !== customerId) return failure(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', [{ campaignError: 'CAMPAIGN_BUDGET_NOT_FOUND' }]);
    if (typeof create.name !== 'string' || !create.name) return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    if (!['SEARCH', 'DISPLAY', 'MULTI_CHANNEL', 'VIDEO', 'SHOPPING', 'PERFORMANCE_MAX', 'DEMAND_GEN'].includes(String(create.advertisingChannelType)))
      return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }]);
    if (BIDDING.filter((name) => name in create).length !== 1) return failure(400, 'INVALID_ARGUMENT', 'A bidding strategy must be set.', [{ biddingError: 'BIDDING_STRATEGY_NOT_SUPPORTED' }]);
    if (!['PAUSED', 'ENABLED'].includes(String(create.status))) return failure(400, 'INVALID_ARGUMENT', 'Invalid status.', [{ fieldError: 'REQUIRED' }]);
    for (const field of ['startDateTime', 'endDateTime'])
      if (field in create && !DATE_TIME.test(String(create[field])))
        return failure(400, 'INVALID_ARGUMENT', "The string date time's format should be yyyy-mm-dd hh:mm:ss.", [{ dateError: 'INVALID_STRING_DATE_TIME_SECONDS' }]);
    if (!create.containsEuPoliticalAdvertising) return failure(400, 'INVALID_ARGUMENT', 'The required field was not present.', [{ fieldError: 'REQUIRED' }], 'containsEuPoliticalAdvertising is required.');
    if (budget.period === 'CUSTOM_PERIOD' && !create.endDateTime) return failure(400, 'INVALID_ARGUMENT', 'A custom-period budget needs an end date.', [{ campaignBudgetError: 'CUSTOM_BUDGET_ON_CAMPAIGN_WITHOUT_END_DATE' }]);
    if (this.created.some((c) => c.kind === 'campaign' && c.accountId === customerId && (c.body as { name?: string }).name === create.name))
      return failure(400, 'INVALID_ARGUMENT', 'Campaign name already used.', [{ campaignError: 'DUPLICATE_CAMPAIGN_NAME' }]);
    const id = this.remember('campaign', customerId, create);
    return { status: 200, json: { results: [{ resourceName: `customers/${customerId}/campaigns/${id}` }] } };
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return failure(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.', [
      { authenticationError: why === 'expired' ? 'OAUTH_TOKEN_EXPIRED' : 'OAUTH_TOKEN_INVALID' },
    ]);
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
                  details: { quotaErrorDetails: { rateScope: 'DEVELOPER', rateName: 'Number of operations for basic access', retryDelay: `${retryAfterSeconds}s` } },
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
    return failure(status, status === 503 ? 'UNAVAILABLE' : 'INTERNAL', status === 503 ? 'The service is currently unavailable.' : 'Internal error encountered.', [{ internalError: 'INTERNAL_ERROR' }]);
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
