import { NetworkSettings } from '@campaign-ops/ad-networks';
import { FakeAnswer, FakeNetwork, FakeNetworkOptions, OAuthShape, RecordedRequest } from './fake-network';
import { decimals, isoExponent } from './fake-units';

const CUSTOMER_NS = 'https://bingads.microsoft.com/Customer/v13';
const CAMPAIGN_NS = 'https://bingads.microsoft.com/CampaignManagement/v13';
const CUSTOMER_PATH = '/Api/CustomerManagement/v13/CustomerManagementService.svc';
const CAMPAIGN_PATH = '/Api/Advertiser/CampaignManagement/v13/CampaignManagementService.svc';
/** The Campaign data contract's members in the WSDL's order (WCF reads them in this order only). */
const CAMPAIGN_ORDER = [
  'AudienceAdsBidAdjustment',
  'BidStrategyScope',
  'BiddingScheme',
  'BudgetType',
  'DailyBudget',
  'DealIds',
  'EndDate',
  'ExperimentId',
  'FinalUrlSuffix',
  'ForwardCompatibilityMap',
  'GoalIds',
  'Id',
  'IsDealCampaign',
  'IsPolitical',
  'MultimediaAdsBidAdjustment',
  'Name',
  'StartDate',
  'Status',
  'SubType',
  'TimeZone',
  'TrackingUrlTemplate',
  'UrlCustomParameters',
  'UseCampaignLevelDates',
  'CampaignType',
  'Settings',
  'BudgetId',
  'Languages',
];
const BIDDING_SCHEMES = [
  'MaxClicks',
  'MaxConversions',
  'TargetCpa',
  'ManualCpc',
  'EnhancedCpc',
  'ManualCpm',
  'TargetRoas',
  'MaxConversionValue',
  'TargetImpressionShare',
];
const CAMPAIGN_TYPES = ['Search', 'Shopping', 'DynamicSearchAds', 'Audience', 'Hotel', 'PerformanceMax', 'App'];
/** The fake's own few IANA → TimeZoneType pairs; an account may also be given the enum name itself. */
const TIME_ZONES: Record<string, string> = {
  'America/New_York': 'EasternTimeUSCanada',
  'America/Los_Angeles': 'PacificTimeUSCanadaTijuana',
  'America/Chicago': 'CentralTimeUSCanada',
  'Europe/London': 'GreenwichMeanTimeDublinEdinburghLisbonLondon',
  'Europe/Paris': 'BrusselsCopenhagenMadridParis',
  'Asia/Tokyo': 'OsakaSapporoTokyo',
  'Asia/Riyadh': 'KuwaitRiyadh',
  'Asia/Kuwait': 'KuwaitRiyadh',
};
const TIME_ZONE_NAMES = new Set([...Object.values(TIME_ZONES), 'AucklandWellington', 'Seoul', 'CanberraMelbourneSydney']);
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
/** Campaign.Name: at most 128 characters (Entity Limits). */
const NAME_MAX = 128;

/**
 * Microsoft Advertising's SOAP services as the adapter meets them: Customer Management `GetAccount`
 * and Campaign Management `AddCampaigns` and `GetCampaignsByAccountId` on one origin, SOAPAction and
 * namespaces checked, header credentials checked, the Campaign's elements in WSDL order, campaign
 * names unique in an account (1115 CampaignServiceCannotCreateDuplicateCampaign: unconfirmed code)
 * and at most 128 characters, and Bing's SOAP faults (HTTP 500). GetCampaignsByAccountId answers
 * the campaigns of the `CampaignType`s asked (Search alone when none is: unconfirmed), unpaged.
 */
export class MicrosoftAdsFake extends FakeNetwork {
  readonly channel = 'microsoft_ads' as const;
  protected readonly oauth: OAuthShape = { consentPath: '/common/oauth2/v2.0/authorize', tokenPath: '/common/oauth2/v2.0/token', accessTokenSeconds: 3600 };
  readonly developerToken = 'fake-bing-developer-token';

  constructor(options?: FakeNetworkOptions) {
    super(options);
  }

  override settings(overrides: Partial<NetworkSettings> = {}): NetworkSettings {
    return super.settings({ developerToken: this.developerToken, ...overrides });
  }

  /** A campaign put in the account by other means (the web UI, an older try). */
  plantCampaign(accountId: string, name: string, campaignType = 'Search'): string {
    return this.remember('campaign', accountId, {
      biddingScheme: 'MaxClicks',
      BudgetType: 'DailyBudgetStandard',
      DailyBudget: '10.00',
      Name: name,
      Status: 'Paused',
      TimeZone: 'EasternTimeUSCanada',
      CampaignType: campaignType,
    });
  }

  /** The manager customer of an account (Account.ParentCustomerId). */
  parentCustomerOf(accountId: string): string {
    return `1${accountId}`;
  }

  protected route(req: RecordedRequest): FakeAnswer {
    const service = req.path === CUSTOMER_PATH ? 'customer' : req.path === CAMPAIGN_PATH ? 'campaign' : null;
    if (!service || req.method !== 'POST') return { status: 404, text: 'Endpoint not found.', contentType: 'text/html' };
    if (!(req.headers['content-type'] ?? '').startsWith('text/xml'))
      return { status: 415, text: "Cannot process the message because the content type was not the expected type 'text/xml; charset=utf-8'." };
    const xml = String(req.rawBody);
    const action = (req.headers.soapaction ?? '').replace(/"/g, '');
    const ns = service === 'customer' ? CUSTOMER_NS : CAMPAIGN_NS;
    const actions = service === 'customer' ? ['GetAccount'] : ['AddCampaigns', 'GetCampaignsByAccountId'];
    if (!actions.includes(action) || !new RegExp(`<${action}Request xmlns="${ns}">`).test(xml))
      return fault('a:ActionNotSupported', `The message with Action '${action}' cannot be processed at the receiver.`);
    const header = (name: string) => value(xml.slice(0, xml.indexOf('<s:Body>')), name);

    const token = header('AuthenticationToken');
    const state = this.tokenState(token);
    if (state !== 'valid') return this.tokenRefusedAnswer(req, state);
    if (header('DeveloperToken') !== this.developerToken)
      return adApiFault('105', 'InvalidCredentials', 'Authentication failed. Either supplied credentials are invalid or the account is inactive.');
    const accountId = value(xml, 'AccountId');
    const account = accountId ? this.reachableAccount(accountId, token) : undefined;
    if (!account) return adApiFault('106', 'UserIsNotAuthorized', 'The user does not represent a authorized developer.');

    if (service === 'customer') {
      const zone = TIME_ZONES[account.timezone] ?? account.timezone;
      return soap(
        `<GetAccountResponse xmlns="${CUSTOMER_NS}"><Account xmlns:a="https://bingads.microsoft.com/Customer/v13/Entities" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">` +
          `<a:BillToCustomerId>${this.parentCustomerOf(account.id)}</a:BillToCustomerId><a:CurrencyCode>${account.currency}</a:CurrencyCode><a:AccountFinancialStatus>ClearFinancialStatus</a:AccountFinancialStatus>` +
          `<a:Id>${account.id}</a:Id><a:Language>English</a:Language><a:Name>Account ${account.id}</a:Name><a:Number>F1${account.id}</a:Number>` +
          `<a:ParentCustomerId>${this.parentCustomerOf(account.id)}</a:ParentCustomerId><a:PaymentMethodId i:nil="true"/><a:AccountLifeCycleStatus>Active</a:AccountLifeCycleStatus>` +
          `<a:TimeZone>${zone}</a:TimeZone><a:PauseReason i:nil="true"/></Account></GetAccountResponse>`,
      );
    }

    if (header('CustomerAccountId') !== accountId)
      return adApiFault('116', 'RequestMissingHeaders', 'The CustomerAccountId header element must be the AccountId of the request.');
    if (header('CustomerId') !== this.parentCustomerOf(account.id))
      return adApiFault('106', 'UserIsNotAuthorized', 'The user is not authorized for the customer in the CustomerId header.');
    if (action === 'GetCampaignsByAccountId') return this.campaignsOf(account.id, xml);
    const campaign = /<Campaigns><Campaign>([\s\S]*)<\/Campaign><\/Campaigns>/.exec(xml)?.[1];
    if (!campaign) return operationFault('1100', 'CampaignServiceNullCampaign', 'The campaign cannot be null or empty.');
    const members = [...campaign.matchAll(/<(\w+)[\s>/]/g)].map((m) => m[1]).filter((name) => CAMPAIGN_ORDER.includes(name));
    const order = members.map((name) => CAMPAIGN_ORDER.indexOf(name));
    if (order.some((position, i) => i > 0 && position <= order[i - 1]))
      return fault(
        'a:DeserializationFailed',
        `The formatter threw an exception while trying to deserialize the message: element order ${members.join(', ')} is not the Campaign contract's.`,
      );

    const field = (name: string) => value(campaign, name);
    const scheme = /<BiddingScheme i:type="(\w+)BiddingScheme"/.exec(campaign)?.[1];
    if (!scheme || !BIDDING_SCHEMES.includes(scheme))
      return batchError('1260', 'CampaignServiceInvalidBiddingScheme', 'The bidding scheme is not valid for the campaign type.');
    if (!field('Name')) return batchError('1116', 'CampaignServiceMissingCampaignName', 'The campaign name is missing.');
    if (Array.from(field('Name')!).length > NAME_MAX) return batchError('1101', 'CampaignServiceInvalidCampaignName', 'The campaign name is not valid.');
    if (!['DailyBudgetStandard', 'LifetimeBudgetStandard'].includes(field('BudgetType') ?? ''))
      return batchError('1152', 'CampaignServiceInvalidBudgetType', 'The budget type is not valid.');
    const budget = field('DailyBudget') ?? '';
    if (!/^\d+(\.\d+)?$/.test(budget) || Number(budget) <= 0)
      return batchError('1118', 'CampaignServiceMissingBudget', 'The campaign budget is missing or not valid.');
    if (decimals(budget) > isoExponent(account.currency))
      return batchError('1118', 'CampaignServiceInvalidBudgetAmount', `The budget has more decimals than ${account.currency} allows.`);
    if (field('Status') !== 'Paused' && field('Status') !== 'Active')
      return batchError('1120', 'CampaignServiceInvalidStatus', 'The campaign status is not valid.');
    if (!TIME_ZONE_NAMES.has(field('TimeZone') ?? '') && !Object.values(TIME_ZONES).includes(field('TimeZone') ?? ''))
      return batchError('1126', 'CampaignServiceInvalidTimeZone', 'The campaign time zone is not valid.');
    if (!CAMPAIGN_TYPES.includes(field('CampaignType') ?? 'Search'))
      return batchError('1289', 'CampaignServiceInvalidCampaignType', 'The campaign type is not valid.');
    for (const date of ['StartDate', 'EndDate'])
      if (field(date) !== undefined && !DATE_TIME.test(field(date)!))
        return batchError('113', 'InvalidDateObject', 'The date specified in the request is not valid.');
    if (field('BudgetType') === 'LifetimeBudgetStandard' && (!field('StartDate') || !field('EndDate')))
      return batchError('1165', 'CampaignServiceLifetimeBudgetRequiresDates', 'A lifetime budget needs the campaign start and end dates.'); // (unconfirmed) code
    if (this.created.some((c) => c.kind === 'campaign' && c.accountId === account.id && (c.body as { Name?: string }).Name === field('Name')))
      return batchError('1115', 'CampaignServiceCannotCreateDuplicateCampaign', 'An attempt was made to create a duplicate of a campaign that already exists.');
    const id = this.remember('campaign', account.id, {
      biddingScheme: scheme,
      ...Object.fromEntries(
        ['BudgetType', 'DailyBudget', 'EndDate', 'Name', 'StartDate', 'Status', 'TimeZone', 'UseCampaignLevelDates', 'CampaignType']
          .filter((n) => field(n) !== undefined)
          .map((n) => [n, field(n)]),
      ),
    });
    return soap(
      `<AddCampaignsResponse xmlns="${CAMPAIGN_NS}"><CampaignIds xmlns:a="http://schemas.datacontract.org/2004/07/System" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><a:long>${id}</a:long></CampaignIds><PartialErrors xmlns:i="http://www.w3.org/2001/XMLSchema-instance"/></AddCampaignsResponse>`,
    );
  }

  /** `GetCampaignsByAccountId`: AccountId, then an optional CampaignType list (space-separated flags), in that order. */
  private campaignsOf(accountId: string, xml: string): FakeAnswer {
    const request = /<GetCampaignsByAccountIdRequest xmlns="[^"]+">([\s\S]*)<\/GetCampaignsByAccountIdRequest>/.exec(xml)?.[1] ?? '';
    const members = [...request.matchAll(/<(\w+)[\s>/]/g)].map((m) => m[1]);
    const order = ['AccountId', 'CampaignType', 'ReturnAdditionalFields'];
    if (members.some((name, i) => !order.includes(name) || (i > 0 && order.indexOf(name) <= order.indexOf(members[i - 1]))))
      return fault(
        'a:DeserializationFailed',
        `The formatter threw an exception while trying to deserialize the message: element order ${members.join(', ')} is not GetCampaignsByAccountIdRequest's.`,
      );
    const types = (value(request, 'CampaignType') ?? 'Search').split(/\s+/).filter(Boolean);
    if (types.some((type) => !CAMPAIGN_TYPES.includes(type)))
      return fault(
        'a:DeserializationFailed',
        `The formatter threw an exception while trying to deserialize the message: ${types.join(' ')} is not a CampaignType.`,
      );
    const campaigns = this.created
      .filter((c) => c.kind === 'campaign' && c.accountId === accountId && types.includes((c.body as { CampaignType?: string }).CampaignType ?? 'Search'))
      .map((c) => {
        const body = c.body as Record<string, string>;
        return (
          `<Campaign><BiddingScheme i:type="${body.biddingScheme}BiddingScheme"><Type>${body.biddingScheme}</Type></BiddingScheme><BudgetType>${body.BudgetType}</BudgetType><DailyBudget>${body.DailyBudget}</DailyBudget>` +
          `<Id>${c.id}</Id><Name>${escape(body.Name)}</Name><Status>${body.Status}</Status><TimeZone>${body.TimeZone}</TimeZone><CampaignType>${body.CampaignType ?? 'Search'}</CampaignType></Campaign>`
        );
      });
    return soap(
      `<GetCampaignsByAccountIdResponse xmlns="${CAMPAIGN_NS}"><Campaigns xmlns:i="http://www.w3.org/2001/XMLSchema-instance">${campaigns.join('')}</Campaigns><PartialErrors xmlns:i="http://www.w3.org/2001/XMLSchema-instance" i:nil="true"/></GetCampaignsByAccountIdResponse>`,
    );
  }

  /** Microsoft would refuse a second campaign of the name (1115): the second of `twice` is made past that check, as two racing creates could leave them. */
  protected override async makeAgain(_req: RecordedRequest, made: MicrosoftAdsFake['created'][number]): Promise<void> {
    this.remember(made.kind, made.accountId, made.body);
  }

  protected tokenRefusedAnswer(_req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer {
    return why === 'expired'
      ? adApiFault('109', 'AuthenticationTokenExpired', 'Authentication token expired. Please renew it or obtain a new token.')
      : adApiFault('105', 'InvalidCredentials', 'Authentication failed. Either supplied credentials are invalid or the account is inactive.');
  }

  /** 117 CallRateExceeded; Microsoft names no delay in the fault (its documentation says 60 seconds). */
  protected rateLimitedAnswer(req: RecordedRequest): FakeAnswer {
    if (req.path === this.oauth.tokenPath)
      return {
        status: 429,
        json: {
          error: 'temporarily_unavailable',
          error_description: 'AADSTS50196: The server terminated an operation because it encountered a client request loop.',
        },
      };
    return adApiFault(
      '117',
      'CallRateExceeded',
      'You have exceeded the number of calls that you are allowed to make in a minute. Please reduce the number of calls that you make per minute.',
    );
  }

  protected serverErrorAnswer(_req: RecordedRequest, status: number): FakeAnswer {
    return status === 500
      ? adApiFault('0', 'InternalError', 'An internal error has occurred.')
      : { status, text: '<html><body><h1>Service Unavailable</h1></body></html>', contentType: 'text/html' };
  }

  /** Microsoft identity platform refusals carry the AADSTS code in the description. */
  protected override grantRefusedAnswer(_req: RecordedRequest, error: string, description: string): FakeAnswer {
    const aadsts = error === 'invalid_grant' ? 'AADSTS70000' : error === 'invalid_client' ? 'AADSTS7000215' : 'AADSTS900144';
    return {
      status: error === 'invalid_client' ? 401 : 400,
      json: { error, error_description: `${aadsts}: ${description}`, error_codes: [Number(aadsts.slice(6))], trace_id: 'fake-trace' },
    };
  }
}

/** The text of the first element with this local name, entities decoded. */
function value(xml: string, name: string): string | undefined {
  const raw = new RegExp(`<(?:\\w+:)?${name}(?:\\s[^>]*)?>([^<]*)</(?:\\w+:)?${name}>`).exec(xml)?.[1];
  return raw?.replace(/&(lt|gt|quot|apos|amp);/g, (_, entity: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[entity]!);
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function soap(body: string): FakeAnswer {
  return {
    status: 200,
    contentType: 'text/xml; charset=utf-8',
    text: `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header><h:TrackingId xmlns:h="https://adapi.microsoft.com">fake-tracking</h:TrackingId></s:Header><s:Body>${body}</s:Body></s:Envelope>`,
  };
}

function fault(code: string, message: string, detail = ''): FakeAnswer {
  return {
    status: 500,
    contentType: 'text/xml; charset=utf-8',
    text: `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode xmlns:a="http://schemas.microsoft.com/net/2005/12/windowscommunicationfoundation/dispatcher">${code}</faultcode><faultstring xml:lang="en-US">${message}</faultstring>${detail}</s:Fault></s:Body></s:Envelope>`,
  };
}

/** Authentication, authorization and throttling: AdApiFaultDetail. */
function adApiFault(code: string, errorCode: string, message: string): FakeAnswer {
  return fault(
    's:Server',
    'Invalid client data. Check the SOAP fault details for more information. TrackingId: fake-tracking.',
    `<detail><AdApiFaultDetail xmlns="https://adapi.microsoft.com" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><TrackingId>fake-tracking</TrackingId><Errors><AdApiError><Code>${code}</Code><Detail i:nil="true"/><ErrorCode>${errorCode}</ErrorCode><Message>${message}</Message></AdApiError></Errors></AdApiFaultDetail></detail>`,
  );
}

/** A request-level refusal of Campaign Management: ApiFaultDetail with OperationErrors. */
function operationFault(code: string, errorCode: string, message: string): FakeAnswer {
  return fault(
    's:Server',
    'Invalid client data. Check the SOAP fault details for more information. TrackingId: fake-tracking.',
    `<detail><ApiFaultDetail xmlns="${CAMPAIGN_NS}" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><TrackingId xmlns="https://adapi.microsoft.com">fake-tracking</TrackingId><BatchErrors/><OperationErrors><OperationError><Code>${code}</Code><Details i:nil="true"/><ErrorCode>${errorCode}</ErrorCode><Message>${message}</Message></OperationError></OperationErrors></ApiFaultDetail></detail>`,
  );
}

/** An item-level refusal: HTTP 200 with a nil id and PartialErrors. */
function batchError(code: string, errorCode: string, message: string): FakeAnswer {
  return soap(
    `<AddCampaignsResponse xmlns="${CAMPAIGN_NS}"><CampaignIds xmlns:a="http://schemas.datacontract.org/2004/07/System" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><a:long i:nil="true"/></CampaignIds>` +
      `<PartialErrors xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><BatchError><Code>${code}</Code><Details i:nil="true"/><ErrorCode>${errorCode}</ErrorCode><FieldPath i:nil="true"/><ForwardCompatibilityMap i:nil="true"/><Index>0</Index><Message>${message}</Message><Type>BatchError</Type></BatchError></PartialErrors></AddCampaignsResponse>`,
  );
}
