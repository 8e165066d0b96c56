import { Objective, ProviderError } from '@campaign-ops/channels';
import {
  AccountAccess,
  AdNetwork,
  CampaignCheck,
  CreatedCampaign,
  FoundCampaign,
  LiveAccess,
  LiveCampaignRequest,
  NetworkSettings,
  ProviderAccount,
  TokenSet,
} from '../ad-network.port';
import { zonedTime } from '../account-time';
import { ISO_4217_EXPONENTS, toMajorUnitString } from '../budget-units';
import { byIdOrder, carriesMarker, markedName } from '../campaign-marker';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, exchangeAuthorizationCode, refreshAccessToken, requireClient, pkceChallenge } from '../oauth2';
import { lifetimeEnd, objectiveOf, unsupportedObjective } from '../unified-campaign';

/**
 * Microsoft Advertising (Bing Ads API v13, SOAP), shared/CHANNELS.md. Every fact of the network is here.
 *
 * - Two services: Customer Management (`GetAccount`) on the `clientcenter.` host and Campaign
 *   Management (`AddCampaigns`) on the `campaign.` host; CHANNEL_MICROSOFT_ADS_API_URL names the
 *   campaign host, and a URL whose host does not start with `campaign.` (a fake, a proxy) serves both.
 * - SOAP headers: `AuthenticationToken` (the OAuth access token), `DeveloperToken`
 *   (CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN) and, for campaign calls, `CustomerId` (the account's
 *   `ParentCustomerId`, read with GetAccount first: one try is two calls) and `CustomerAccountId`.
 *   WCF reads elements in the WSDL's order: the Campaign's children are written in that order.
 * - OAuth on the Microsoft identity platform: scopes `https://ads.microsoft.com/msads.manage
 *   offline_access` (also sent on every token call); refresh tokens roll (a new one each refresh)
 *   and die after 90 days unused (AADSTS700082).
 * - Account read: `CurrencyCode` (ISO, except legacy codes mapped below) and `TimeZone`, Microsoft's
 *   own enum, mapped to IANA (one representative zone per enum value).
 * - Campaign: no objective field: campaign type and bidding scheme stand for it (below); budget
 *   `DailyBudget` in major units with `BudgetType` DailyBudgetStandard, or LifetimeBudgetStandard
 *   with the amount in the same element (unconfirmed) and campaign-level `StartDate`/`EndDate`
 *   (unconfirmed: local date-times of the campaign's time zone, with `UseCampaignLevelDates`);
 *   `TimeZone` (the account's, as the enum) required; created `Paused` (also Microsoft's default).
 * - The dispatch's marker: the campaign's `Name` carries it (`markedName`), within the 128
 *   characters Microsoft allows (its Entity Limits page), the partner's part shortened, never the
 *   marker. (Microsoft has labels, but they take calls of their own; the name is what every
 *   channel uses.) A campaign name must be unique among the account's campaigns that are not
 *   deleted, so a second create of the dispatch is refused: a refusal with 1115
 *   CampaignServiceCannotCreateDuplicateCampaign or 1129 CampaignServiceCampaignAlreadyExists
 *   (unconfirmed: which of the two a name in use gets) is answered with the campaign found by
 *   the lookup below (`found: true`); when none is found the refusal stands.
 * - Finding a campaign again: Campaign Management has no name filter and no creation time, so
 *   `GetCampaignsByAccountId` (AccountId, `CampaignType` "Search Audience": the two types this
 *   adapter creates; the call is not paged and does not return deleted campaigns) lists the
 *   account's campaigns, the same GetAccount first for the `CustomerId` header; kept: the names
 *   that carry the marker, oldest first by id (Microsoft's ids rise). A risk (unconfirmed):
 *   integrators report Audience campaigns (ManualCpm bidding among them, which `awareness` uses)
 *   missing from GetCampaignsByAccountId and GetCampaignsByIds (BingAds-Python-SDK issue #248,
 *   a Microsoft Q&A thread); such a campaign would not be found again, and a second create of its
 *   name would be refused (1115/1129) with nothing found, which stands as the refusal.
 * - Dry run: Campaign Management has no validate-only call, so `validateCampaign` builds the very
 *   Campaign element `createCampaign` sends (every rule above applies) and calls nothing:
 *   `checkedBy: 'rules'`.
 * - Errors: SOAP faults with HTTP 500: `Code` 105 InvalidCredentials and 109 AuthenticationTokenExpired
 *   re-authenticate; 117 CallRateExceeded: wait 60 s; 106 UserIsNotAuthorized and 1102 (unconfirmed:
 *   invalid account id) unreachable; 0 InternalError transient; others validation. A fault whose
 *   body cannot be read, and any other 5xx, is transient.
 * - Revocation (DELETE /v1/connections/:id): none. The Microsoft identity platform has no RFC 7009
 *   endpoint that revokes one grant; Graph's `POST /users/{id}/revokeSignInSessions` ends every
 *   session of the user in every app, needs `User.RevokeSessions.All`, and is not supported for
 *   personal Microsoft accounts: not ours to call. A delete destroys our copy of the tokens only.
 */
const CUSTOMER_NS = 'https://bingads.microsoft.com/Customer/v13';
const CAMPAIGN_NS = 'https://bingads.microsoft.com/CampaignManagement/v13';
const CUSTOMER_PATH = '/Api/CustomerManagement/v13/CustomerManagementService.svc';
const CAMPAIGN_PATH = '/Api/Advertiser/CampaignManagement/v13/CampaignManagementService.svc';
const SCOPES = ['https://ads.microsoft.com/msads.manage', 'offline_access'];
/** The longest attribute list an element of Microsoft's answers is read with (theirs are namespaces and i:nil, a few dozen characters). */
const ATTRIBUTES_MAX = 1024;
/** Campaign.Name: at most 128 characters (Entity Limits). */
const NAME_MAX_LENGTH = 128;
/** The campaign types this adapter creates, so the ones a lookup lists. */
const CAMPAIGN_TYPES = 'Search Audience';
/** The answers to an AddCampaigns whose name is in use (unconfirmed which). */
const NAME_IN_USE_CODES = ['1115', '1129'];
/** CallRateExceeded: Microsoft's documented wait. */
const CALL_RATE_WAIT_MS = 60_000;

const OBJECTIVES: Record<Exclude<Objective, 'app_installs'>, { campaignType: 'Search' | 'Audience'; bidding: string }> = {
  conversion: { campaignType: 'Search', bidding: 'MaxConversions' },
  leads: { campaignType: 'Search', bidding: 'MaxConversions' },
  traffic: { campaignType: 'Search', bidding: 'MaxClicks' },
  awareness: { campaignType: 'Audience', bidding: 'ManualCpm' }, // (unconfirmed)
  engagement: { campaignType: 'Audience', bidding: 'MaxClicks' }, // (unconfirmed)
};

/** Microsoft's TimeZoneType → IANA (the Windows zones they stand for, as CLDR maps them). */
export const MICROSOFT_TIME_ZONES: Readonly<Record<string, string>> = {
  AbuDhabiMuscat: 'Asia/Dubai',
  Adelaide: 'Australia/Adelaide',
  Alaska: 'America/Anchorage',
  AlmatyNovosibirsk: 'Asia/Almaty', // (unconfirmed) Almaty moved to UTC+5 in 2024; Novosibirsk is UTC+7
  AmsterdamBerlinBernRomeStockholmVienna: 'Europe/Berlin',
  Arizona: 'America/Phoenix',
  AstanaDhaka: 'Asia/Dhaka',
  AthensBuckarestIstanbul: 'Europe/Athens',
  AtlanticTimeCanada: 'America/Halifax',
  AucklandWellington: 'Pacific/Auckland',
  Azores: 'Atlantic/Azores',
  Baghdad: 'Asia/Baghdad',
  BakuTbilisiYerevan: 'Asia/Baku',
  BangkokHanoiJakarta: 'Asia/Bangkok',
  BeijingChongqingHongKongUrumqi: 'Asia/Shanghai',
  BelgradeBratislavaBudapestLjubljanaPrague: 'Europe/Budapest',
  BogotaLimaQuito: 'America/Bogota',
  Brasilia: 'America/Sao_Paulo',
  Brisbane: 'Australia/Brisbane',
  BrusselsCopenhagenMadridParis: 'Europe/Paris',
  Bucharest: 'Europe/Bucharest',
  BuenosAiresGeorgetown: 'America/Argentina/Buenos_Aires',
  Cairo: 'Africa/Cairo',
  CanberraMelbourneSydney: 'Australia/Sydney',
  CapeVerdeIsland: 'Atlantic/Cape_Verde',
  CaracasLaPaz: 'America/Caracas',
  CasablancaMonrovia: 'Africa/Casablanca',
  CentralAmerica: 'America/Guatemala',
  CentralTimeUSCanada: 'America/Chicago',
  ChennaiKolkataMumbaiNewDelhi: 'Asia/Kolkata',
  ChihuahuaLaPazMazatlan: 'America/Mazatlan',
  Darwin: 'Australia/Darwin',
  EasternTimeUSCanada: 'America/New_York',
  Ekaterinburg: 'Asia/Yekaterinburg',
  FijiKamchatkaMarshallIsland: 'Pacific/Fiji',
  Greenland: 'America/Nuuk',
  GreenwichMeanTimeDublinEdinburghLisbonLondon: 'Europe/London',
  GuadalajaraMexicoCityMonterrey: 'America/Mexico_City',
  GuamPortMoresby: 'Pacific/Port_Moresby',
  HararePretoria: 'Africa/Johannesburg',
  Hawaii: 'Pacific/Honolulu',
  HelsinkiKyivRigaSofiaTallinnVilnius: 'Europe/Helsinki',
  Hobart: 'Australia/Hobart',
  IndianaEast: 'America/Indiana/Indianapolis',
  InternationalDateLineWest: 'Etc/GMT+12',
  IrkutskUlaanBataar: 'Asia/Irkutsk',
  IslamabadKarachiTashkent: 'Asia/Karachi',
  Jerusalem: 'Asia/Jerusalem',
  Kabul: 'Asia/Kabul',
  Kathmandu: 'Asia/Kathmandu',
  Krasnoyarsk: 'Asia/Krasnoyarsk',
  KualaLumpurSingapore: 'Asia/Singapore',
  KuwaitRiyadh: 'Asia/Riyadh',
  SolomonIslandNewCaledonia: 'Pacific/Guadalcanal',
  MidAtlantic: 'Atlantic/South_Georgia',
  MidwayIslandAndSamoa: 'Pacific/Pago_Pago',
  MoscowStPetersburgVolgograd: 'Europe/Moscow',
  MountainTimeUSCanada: 'America/Denver',
  Nairobi: 'Africa/Nairobi',
  Newfoundland: 'America/St_Johns',
  Nukualofa: 'Pacific/Tongatapu',
  OsakaSapporoTokyo: 'Asia/Tokyo',
  PacificTimeUSCanadaTijuana: 'America/Los_Angeles',
  Perth: 'Australia/Perth',
  Rangoon: 'Asia/Yangon',
  Santiago: 'America/Santiago',
  SarajevoSkopjeWarsawZagreb: 'Europe/Warsaw',
  Saskatchewan: 'America/Regina',
  Seoul: 'Asia/Seoul',
  SriJayawardenepura: 'Asia/Colombo',
  Taipei: 'Asia/Taipei',
  Tehran: 'Asia/Tehran',
  Vladivostok: 'Asia/Vladivostok',
  WestCentralAfrica: 'Africa/Lagos',
  Yakutsk: 'Asia/Yakutsk',
};
const TIME_ZONE_BY_IANA: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(MICROSOFT_TIME_ZONES).map(([name, iana]) => [iana, name]));

/** Legacy codes still in Microsoft's CurrencyCode enum, as today's ISO code. */
const LEGACY_CURRENCIES: Readonly<Record<string, string>> = { AZM: 'AZN', BGL: 'BGN', BYB: 'BYN', ROL: 'RON', RUR: 'RUB', VEF: 'VES' };

const AUTH_CODES = ['105', '109'];
const RATE_CODES = ['117'];
const UNREACHABLE_CODES = ['106', '1102'];
const INTERNAL_CODES = ['0'];

export class MicrosoftAds implements AdNetwork {
  readonly channel = 'microsoft_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  /** The Microsoft identity platform takes PKCE (S256) on the authorization code flow. */
  readonly pkce = true;

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string; codeChallenge?: string }): string {
    return consentUrl(this.settings, {
      client_id: requireClient(this.settings).clientId,
      response_type: 'code',
      redirect_uri: request.redirectUri,
      response_mode: 'query',
      scope: SCOPES.join(' '),
      state: request.state,
      ...pkceChallenge(request.codeChallenge),
    });
  }

  exchangeCode(request: { code: string; redirectUri: string; codeVerifier?: string }): Promise<TokenSet> {
    return exchangeAuthorizationCode(this.http, this.settings, request.code, request.redirectUri, {
      extra: { scope: SCOPES.join(' ') },
      codeVerifier: request.codeVerifier,
    });
  }

  /** Microsoft answers a new refresh token on each refresh (the old one keeps working until it expires). */
  refresh(refreshToken: string): Promise<TokenSet> {
    return refreshAccessToken(this.http, this.settings, refreshToken, { extra: { scope: SCOPES.join(' ') } });
  }

  /** Every Microsoft Advertising SOAP call carries the developer token: without it no live launch can run. */
  launchUnavailableReason(): string | null {
    return this.settings.developerToken
      ? null
      : 'Microsoft Advertising needs a developer token on every call: CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN is not set';
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const account = await this.getAccount(access);
    return { currency: account.currency, timezone: account.timezone };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const campaignXml = campaignElement(access, request);
    const accountId = accountIdOf(access.providerAccountId);
    const { parentCustomerId } = await this.getAccount(access);
    const answer = await this.campaignCall(
      access,
      parentCustomerId,
      'AddCampaigns',
      `<AddCampaignsRequest xmlns="${CAMPAIGN_NS}"><AccountId>${accountId}</AccountId><Campaigns><Campaign>${campaignXml}</Campaign></Campaigns></AddCampaignsRequest>`,
    );
    const id = xmlValues(answer, 'long')[0];
    if (id) return { providerResourceId: id };
    const partial = soapErrors(answer)[0];
    if (!partial) throw new ProviderError('transient', 'microsoft_ads answered no campaign id', null);
    const refusal = new ProviderError('validation', `microsoft_ads: ${partial.message}`, partial.errorCode ?? partial.code, 200);
    // The name is in use: an earlier try of this dispatch made the campaign (its answer was lost).
    if (!NAME_IN_USE_CODES.includes(partial.code)) throw refusal;
    const [found] = await this.listMarked(access, parentCustomerId, request.dispatchId);
    if (!found) throw refusal;
    return { providerResourceId: found.providerResourceId, found: true };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const { parentCustomerId } = await this.getAccount(access);
    return this.listMarked(access, parentCustomerId, request.dispatchId);
  }

  /** No validate-only call in Campaign Management: the Campaign element a create would send is built (its rules applied), nothing is called. */
  async validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    campaignElement(access, request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /** The account's campaigns (of the types this adapter makes) that carry the dispatch's marker, oldest first. */
  private async listMarked(access: AccountAccess, parentCustomerId: string, dispatchId: string): Promise<FoundCampaign[]> {
    const accountId = accountIdOf(access.providerAccountId);
    const answer = await this.campaignCall(
      access,
      parentCustomerId,
      'GetCampaignsByAccountId',
      `<GetCampaignsByAccountIdRequest xmlns="${CAMPAIGN_NS}"><AccountId>${accountId}</AccountId><CampaignType>${CAMPAIGN_TYPES}</CampaignType></GetCampaignsByAccountIdRequest>`,
    );
    const found = xmlBlocks(answer, ['Campaign'])
      .map(({ inner }) => ({ id: xmlValues(inner, 'Id')[0], name: xmlValues(inner, 'Name')[0] }))
      .filter((campaign) => /^\d+$/.test(campaign.id ?? '') && carriesMarker(campaign.name, dispatchId))
      .map((campaign) => campaign.id!);
    // Oldest first by id: Campaign Management keeps no creation time; its ids rise.
    found.sort(byIdOrder);
    return found.map((providerResourceId) => ({ providerResourceId, createdAt: null }));
  }

  private campaignCall(access: AccountAccess, parentCustomerId: string, action: string, body: string): Promise<string> {
    const accountId = accountIdOf(access.providerAccountId);
    return this.soap(
      action,
      `${this.settings.apiUrl}${CAMPAIGN_PATH}`,
      CAMPAIGN_NS,
      { AuthenticationToken: access.accessToken, CustomerAccountId: accountId, CustomerId: parentCustomerId, DeveloperToken: this.developerToken() },
      body,
    );
  }

  private async getAccount(access: AccountAccess): Promise<ProviderAccount & { parentCustomerId: string }> {
    const accountId = accountIdOf(access.providerAccountId);
    const answer = await this.soap(
      'GetAccount',
      customerManagementUrl(this.settings.apiUrl),
      CUSTOMER_NS,
      { AuthenticationToken: access.accessToken, DeveloperToken: this.developerToken() },
      `<GetAccountRequest xmlns="${CUSTOMER_NS}"><AccountId>${accountId}</AccountId></GetAccountRequest>`,
    );
    const code = xmlValues(answer, 'CurrencyCode')[0];
    const zone = xmlValues(answer, 'TimeZone')[0];
    const parentCustomerId = xmlValues(answer, 'ParentCustomerId')[0];
    const status = xmlValues(answer, 'AccountLifeCycleStatus')[0];
    if (!code || !zone || !parentCustomerId) throw new ProviderError('account_unreachable', `microsoft_ads answered no account ${accountId}`, null);
    if (status === 'Inactive' || status === 'Suspended')
      throw new ProviderError('account_unreachable', `microsoft_ads account ${accountId} is ${status}`, status);
    const currency = LEGACY_CURRENCIES[code] ?? code;
    if (ISO_4217_EXPONENTS[currency] === undefined)
      throw new ProviderError(
        'account_unreachable',
        `microsoft_ads account ${accountId} bills in ${code}, no current ISO 4217 currency`,
        'currency_unsupported',
      );
    const timezone = MICROSOFT_TIME_ZONES[zone];
    if (!timezone) throw new ProviderError('transient', `microsoft_ads answered a time zone this adapter does not know: ${zone}`, null);
    return { currency, timezone, parentCustomerId };
  }

  private developerToken(): string {
    if (!this.settings.developerToken)
      throw new ProviderError('validation', 'microsoft_ads needs CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN', 'channel_not_configured');
    return this.settings.developerToken;
  }

  private async soap(action: string, url: string, ns: string, headers: Record<string, string>, body: string): Promise<string> {
    const headerXml = Object.entries(headers)
      .map(([name, value]) => `<${name}>${xmlEscape(value)}</${name}>`)
      .join('');
    const envelope = `<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header xmlns="${ns}">${headerXml}</s:Header><s:Body>${body}</s:Body></s:Envelope>`;
    const answer = await this.http.call({
      method: 'POST',
      url,
      headers: { accept: 'text/xml', soapaction: action },
      raw: { body: envelope, contentType: 'text/xml; charset=utf-8' },
    });
    if (answer.status >= 200 && answer.status < 300 && !/<(?:\w+:)?Fault>/.test(answer.text)) return answer.text;
    throw microsoftError(answer);
  }
}

/**
 * The Campaign element's children as Microsoft takes them, named with the dispatch's marker: what
 * a create sends, and all a dry run checks.
 */
function campaignElement(access: LiveAccess, request: LiveCampaignRequest): string {
  const { campaign } = request;
  const objective = objectiveOf(campaign);
  if (objective === 'app_installs') throw unsupportedObjective('microsoft_ads', objective, 'an app campaign needs an app the unified campaign does not carry');
  const end = lifetimeEnd('microsoft_ads', campaign);
  const tz = access.account.timezone;
  const timeZone = TIME_ZONE_BY_IANA[tz];
  if (!timeZone) throw new ProviderError('validation', `microsoft_ads has no time zone for ${tz}`, 'timezone_unsupported');
  const amount = toMajorUnitString(campaign.budget.amount_micros, campaign.budget.currency);
  accountIdOf(access.providerAccountId);
  const mapped = OBJECTIVES[objective];
  // Children in the WSDL's order: BiddingScheme, BudgetType, DailyBudget, EndDate, Name, StartDate, Status, TimeZone, UseCampaignLevelDates, CampaignType, Languages.
  return [
    `<BiddingScheme i:type="${mapped.bidding}BiddingScheme" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><Type>${mapped.bidding}</Type></BiddingScheme>`,
    `<BudgetType>${campaign.budget.type === 'daily' ? 'DailyBudgetStandard' : 'LifetimeBudgetStandard'}</BudgetType>`,
    `<DailyBudget>${amount}</DailyBudget>`,
    end ? `<EndDate>${localDateTimeT(end, tz)}</EndDate>` : '',
    `<Name>${xmlEscape(markedName(campaign.name, request.dispatchId, NAME_MAX_LENGTH))}</Name>`,
    `<StartDate>${localDateTimeT(campaign.schedule.start_at, tz)}</StartDate>`,
    '<Status>Paused</Status>',
    `<TimeZone>${timeZone}</TimeZone>`,
    '<UseCampaignLevelDates>true</UseCampaignLevelDates>',
    `<CampaignType>${mapped.campaignType}</CampaignType>`,
    '<Languages xmlns:a1="http://schemas.microsoft.com/2003/10/Serialization/Arrays"><a1:string>All</a1:string></Languages>',
  ].join('');
}

function accountIdOf(providerAccountId: string): string {
  if (!/^\d+$/.test(providerAccountId))
    throw new ProviderError('account_unreachable', `microsoft_ads account ids are digits, not "${providerAccountId}"`, null);
  return providerAccountId;
}

/** Customer Management lives on `clientcenter.` where Campaign Management lives on `campaign.` (production and sandbox alike). */
export function customerManagementUrl(apiUrl: string): string {
  const url = new URL(apiUrl);
  if (url.hostname.startsWith('campaign.')) url.hostname = `clientcenter.${url.hostname.slice('campaign.'.length)}`;
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}${CUSTOMER_PATH}`;
}

/** A local date-time in the zone, as xs:dateTime without offset: `2027-01-04T04:00:00`. */
function localDateTimeT(instant: string, timeZone: string): string {
  const zoned = zonedTime(instant, timeZone);
  return `${zoned.date}T${zoned.time}`;
}

interface SoapError {
  code: string;
  errorCode?: string;
  message: string;
}

/** Every error element of a fault or of partial errors: AdApiError, OperationError, BatchError. */
function soapErrors(xml: string): SoapError[] {
  const blocks = xmlBlocks(xml, ['AdApiError', 'OperationError', 'BatchError', 'EditorialError']).map(({ inner }) => inner);
  return blocks.map((block) => ({
    code: xmlValues(block, 'Code')[0] ?? '',
    errorCode: xmlValues(block, 'ErrorCode')[0],
    message: xmlValues(block, 'Message')[0] ?? 'error',
  }));
}

/** A Bing Ads SOAP fault (HTTP 500 for every refusal), classified by its numeric `Code`. */
export function microsoftError(answer: NetworkAnswer): ProviderError {
  const errors = soapErrors(answer.text);
  const first = errors[0];
  if (!first) {
    if (answer.status === 429)
      return new ProviderError('rate_limited', 'microsoft_ads asks to slow down (HTTP 429)', null, 429, answer.retryAfterMs ?? CALL_RATE_WAIT_MS);
    if (answer.status >= 500)
      return new ProviderError('transient', `microsoft_ads failed with HTTP ${answer.status}`, null, answer.status, answer.retryAfterMs);
    return new ProviderError('validation', `microsoft_ads refused the call with HTTP ${answer.status}${faultString(answer.text)}`, null, answer.status);
  }
  const codes = errors.map((error) => error.code);
  const providerCode = first.errorCode ?? first.code;
  const message = `microsoft_ads: ${first.message}`;
  const has = (list: string[]) => codes.some((code) => list.includes(code));
  if (has(AUTH_CODES)) return new ProviderError('auth', message, errors.find((e) => AUTH_CODES.includes(e.code))!.errorCode ?? providerCode, answer.status);
  if (has(RATE_CODES)) return new ProviderError('rate_limited', message, 'CallRateExceeded', answer.status, CALL_RATE_WAIT_MS);
  if (has(UNREACHABLE_CODES)) return new ProviderError('account_unreachable', message, providerCode, answer.status);
  if (has(INTERNAL_CODES)) return new ProviderError('transient', message, providerCode, answer.status);
  return new ProviderError('validation', message, providerCode, answer.status);
}

function faultString(xml: string): string {
  const text = xmlValues(xml, 'faultstring')[0];
  return text ? `: ${text}` : '';
}

/**
 * The content of every element with one of these local names (any prefix), in document order. In
 * one pass, so the time stays linear in the answer whatever it holds (a lazy `([\s\S]*?)</\1>`
 * is quadratic on an answer of many open tags that never close): each open tag's close is searched
 * for once, from it, and a name whose close is missing is not searched for again (no later one can
 * close). Attributes are read up to ATTRIBUTES_MAX characters.
 */
export function xmlBlocks(xml: string, names: readonly string[]): Array<{ name: string; inner: string }> {
  const open = new RegExp(`<(?:\\w+:)?(${names.join('|')})(?:\\s[^>]{0,${ATTRIBUTES_MAX}})?>`, 'g');
  const unclosed = new Set<string>();
  const blocks: Array<{ name: string; inner: string }> = [];
  for (let tag = open.exec(xml); tag && unclosed.size < names.length; tag = open.exec(xml)) {
    const name = tag[1];
    if (unclosed.has(name)) continue;
    const close = new RegExp(`</(?:\\w+:)?${name}>`, 'g');
    close.lastIndex = open.lastIndex;
    const end = close.exec(xml);
    if (!end) {
      unclosed.add(name);
      continue;
    }
    blocks.push({ name, inner: xml.slice(open.lastIndex, end.index) });
    open.lastIndex = close.lastIndex;
  }
  return blocks;
}

/** Text of every element with this local name (any prefix), entities decoded; nil elements skipped. */
export function xmlValues(xml: string, localName: string): string[] {
  const pattern = new RegExp(`<(?:\\w+:)?${localName}(?:\\s[^>]{0,${ATTRIBUTES_MAX}})?>([^<]*)</(?:\\w+:)?${localName}>`, 'g');
  return [...xml.matchAll(pattern)].map((m) => xmlUnescape(m[1]));
}

export function xmlEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

function xmlUnescape(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-f]+));/gi, (_, name: string, dec?: string, hex?: string) => {
    if (dec) return String.fromCodePoint(Number(dec));
    if (hex) return String.fromCodePoint(parseInt(hex, 16));
    return { lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' }[name.toLowerCase()] ?? '';
  });
}
