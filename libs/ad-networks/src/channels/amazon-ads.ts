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
  ProviderError,
  TokenSet,
} from '../ad-network.port';
import { isIanaTimeZone } from '../account-time';
import { toMajorUnitNumber } from '../budget-units';
import { carriesMarker, markedName, oldestFirst } from '../campaign-marker';
import { NetworkAnswer, NetworkHttp } from '../network-http';
import { consentUrl, exchangeAuthorizationCode, refreshAccessToken, requireClient, pkceChallenge } from '../oauth2';
import { lifetimeEnd, objectiveOf } from '../unified-campaign';

/**
 * Amazon Ads API: every fact of the network lives in this file.
 *
 * - Login with Amazon (OAuth 2): consent at `www.amazon.com/ap/oa` (North America; Europe and Far
 *   East have their own hosts, set with CHANNEL_AMAZON_ADS_OAUTH_URL / _TOKEN_URL / _API_URL),
 *   scope `advertising::campaign_management`; code exchange and refresh at
 *   `api.amazon.com/auth/o2/token`, form body, client id and secret in the body. Access tokens live
 *   60 minutes; a refresh token is issued; a refused one answers 400 `invalid_grant`.
 * - Every call: `Authorization: Bearer`, `Amazon-Advertising-API-ClientId` (the LwA client id;
 *   the unified v1 API names it `Amazon-Ads-ClientId`, so we send both), and for profile-scoped
 *   calls `Amazon-Advertising-API-Scope: <profileId>` and `Amazon-Ads-AccountId: <advertiser
 *   account id>`.
 * - The provider account id is the advertiser account id, `accountInfo.id` of a profile (e.g.
 *   `ENTITY2IHJ...` or `A3...`); a numeric profile id is accepted as well.
 * - Ad account read: `GET /v2/profiles`, the profile whose `accountInfo.id` (or `profileId`) is ours:
 *   `currencyCode` and `timezone` (IANA).
 * - Campaign create: the profile again (its id and marketplace), then
 *   `POST /adsApi/v1/create/campaigns` with `{campaigns: [...]}`: a Sponsored Products campaign
 *   (there is no objective field: the six objectives all make the same campaign), `state` PAUSED,
 *   `marketplaceScope` SINGLE_MARKETPLACE with the profile's marketplace (Amazon's profiles say
 *   `UK` for the `GB` marketplace), automatic targeting, `budgets` with
 *   `monetaryBudget.value` in major units (a JSON number, exact from the ISO 4217 exponent) and
 *   `recurrenceTimePeriod: DAILY`, the only recurrence Sponsored Products takes: a lifetime
 *   budget is refused before any call. `startDateTime` / `endDateTime` ISO 8601 in UTC with `Z`.
 *   It answers 207 `{success: [{index, campaign: {campaignId, ...}}], error: [{index, errors:
 *   [{code, message, fieldLocation}]}]}`; an error entry is Amazon's refusal of that campaign
 *   (by its code: TOO_MANY_REQUESTS slow down, UNAUTHORIZED re-authenticate, INTERNAL_ERROR and
 *   CONFLICT transient, FORBIDDEN unreachable, the rest validation).
 * - The dispatch's marker: the campaign's name carries it (`markedName`), shortened to 128
 *   characters (unconfirmed: Amazon's unified reference gives a campaign name no maximum; 128 is
 *   the Sponsored Products limit of its earlier API). Campaign `tags` cannot be queried, so the
 *   name is where a lookup can find it; no tag is set.
 * - Finding a campaign again: the profile, then `POST /adsApi/v1/query/campaigns` (same headers
 *   as the create) with `adProductFilter` SPONSORED_PRODUCTS, `nameFilter` {include: [dispatch
 *   id], queryTermMatchType: BROAD_MATCH} (unconfirmed that a broad match finds a term at the
 *   end of a name: the names it answers are checked for the marker anyway), `stateFilter`
 *   ENABLED and PAUSED (ARCHIVED is Amazon's delete, terminal), `maxResults` 5000, and
 *   `nextToken` for at most 10 pages. Answers `{campaigns, nextToken}`; oldest first by
 *   `creationDateTime`, then by `campaignId`. (Shapes from Amazon's unified API spec.)
 * - Dry run: Amazon has no validate-only call, so `validateCampaign` applies every rule the
 *   create applies before its first call, building the same campaign (the marketplace, which only
 *   the profile read gives, left out), and calls nothing: `checkedBy: 'rules'`.
 * - Re-authenticate: HTTP 401; a refused refresh. Slow down: 429 after its `Retry-After`.
 *   5xx transient. 403 / 404, or no profile for the account: unreachable. Other 4xx: validation
 *   with Amazon's `code` and `message` (`details` in older answers).
 * - Revocation (DELETE /v1/connections/:id): none. Login with Amazon documents no token revocation
 *   endpoint (only the token grant at `/auth/o2/token`); the advertiser removes the app under "Your
 *   Active Apps & Websites" (amazon.com/ap/adam). A delete destroys our copy of the tokens only.
 */
const SCOPES = ['advertising::campaign_management'] as const;
/** Amazon's profiles use UK where the marketplace enum has GB. */
const MARKETPLACE_OF_COUNTRY: Readonly<Record<string, string>> = { UK: 'GB' };
/** Unconfirmed (see the header). */
const NAME_MAX_LENGTH = 128;
/** `maxResults` of a campaign query: at most 5000. */
const LOOKUP_PAGE_SIZE = 5_000;
/** Bounds the lookup (the name filter leaves few campaigns to page through anyway). */
const LOOKUP_MAX_PAGES = 10;

interface Profile {
  profileId?: unknown;
  countryCode?: unknown;
  currencyCode?: unknown;
  timezone?: unknown;
  accountInfo?: { id?: unknown; marketplaceStringId?: unknown; type?: unknown };
}

interface AmazonError {
  code?: unknown;
  message?: unknown;
  details?: unknown;
}

export class AmazonAds implements AdNetwork {
  readonly channel = 'amazon_ads' as const;
  readonly scopes = SCOPES;

  constructor(
    private readonly settings: NetworkSettings,
    private readonly http: NetworkHttp,
  ) {}

  /** Login with Amazon takes PKCE (S256) on the authorization code grant. */
  readonly pkce = true;

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string; codeChallenge?: string }): string {
    const { clientId } = requireClient(this.settings);
    return consentUrl(this.settings, {
      client_id: clientId,
      scope: SCOPES.join(' '),
      response_type: 'code',
      redirect_uri: request.redirectUri,
      state: request.state,
      ...pkceChallenge(request.codeChallenge),
    });
  }

  exchangeCode(request: { code: string; redirectUri: string; codeVerifier?: string }): Promise<TokenSet> {
    return exchangeAuthorizationCode(this.http, this.settings, request.code, request.redirectUri, { codeVerifier: request.codeVerifier });
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return refreshAccessToken(this.http, this.settings, refreshToken);
  }

  /** Every Amazon Ads call names the app (Amazon-Advertising-API-ClientId): without it no live launch can run. */
  launchUnavailableReason(): string | null {
    return this.settings.clientId ? null : 'Amazon Ads names the app on every call: CHANNEL_AMAZON_ADS_CLIENT_ID is not set';
  }

  async readAccount(access: AccountAccess): Promise<ProviderAccount> {
    const profile = await this.profile(access);
    return { currency: profile.currency, timezone: profile.timezone };
  }

  async createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign> {
    const campaignIn = this.campaignRequest(request); // every rule, before any call
    const profile = await this.profile(access);
    const answer = await this.http.call({
      method: 'POST',
      url: `${this.settings.apiUrl}/adsApi/v1/create/campaigns`,
      headers: this.profileHeaders(access, profile),
      json: { campaigns: [campaignIn(profile.marketplace)] },
    });
    if (answer.status !== 207 && answer.status !== 200) throw this.refusal(answer, 'campaign create');
    const result = (answer.json ?? {}) as {
      success?: Array<{ index?: number; campaign?: { campaignId?: unknown } }>;
      error?: Array<{ index?: number; errors?: AmazonError[] }>;
    };
    const refused = result.error?.find((entry) => entry.index === 0)?.errors?.[0];
    if (refused) throw this.itemRefusal(refused, answer.status);
    const campaignId = result.success?.find((entry) => entry.index === 0)?.campaign?.campaignId;
    if (typeof campaignId !== 'string' || !campaignId)
      throw new ProviderError('transient', 'amazon_ads answered the campaign create without a campaignId', null, answer.status);
    return { providerResourceId: campaignId };
  }

  async findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]> {
    const profile = await this.profile(access);
    const found: FoundCampaign[] = [];
    let nextToken: string | undefined;
    for (let page = 0; page < LOOKUP_MAX_PAGES; page++) {
      const answer = await this.http.call({
        method: 'POST',
        url: `${this.settings.apiUrl}/adsApi/v1/query/campaigns`,
        headers: this.profileHeaders(access, profile),
        json: {
          adProductFilter: { include: ['SPONSORED_PRODUCTS'] },
          nameFilter: { include: [request.dispatchId], queryTermMatchType: 'BROAD_MATCH' },
          stateFilter: { include: ['ENABLED', 'PAUSED'] },
          maxResults: LOOKUP_PAGE_SIZE,
          ...(nextToken ? { nextToken } : {}),
        },
      });
      if (answer.status !== 200) throw this.refusal(answer, 'campaign lookup');
      const body = (Array.isArray(answer.json) ? {} : (answer.json ?? {})) as { campaigns?: unknown; nextToken?: unknown };
      if (!Array.isArray(body.campaigns)) throw new ProviderError('transient', 'amazon_ads answered the campaign query without campaigns', null, answer.status);
      for (const campaign of body.campaigns as Array<{ campaignId?: unknown; name?: unknown; creationDateTime?: unknown }>)
        if (typeof campaign?.campaignId === 'string' && carriesMarker(campaign.name, request.dispatchId))
          found.push({ providerResourceId: campaign.campaignId, createdAt: typeof campaign.creationDateTime === 'string' ? campaign.creationDateTime : null });
      nextToken = typeof body.nextToken === 'string' && body.nextToken ? body.nextToken : undefined;
      if (!nextToken) break;
    }
    return oldestFirst(found);
  }

  async validateCampaign(_access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck> {
    this.campaignRequest(request);
    return { checkedBy: 'rules', warnings: [] };
  }

  /**
   * The campaign as the unified v1 API takes it (one element of `campaigns`), named with the
   * dispatch's marker: every rule is applied here, and the campaign is completed with the
   * profile's marketplace once the create has read it. What a create sends, and all a dry run checks.
   */
  private campaignRequest(request: LiveCampaignRequest): (marketplace: string) => Record<string, unknown> {
    const spec = request.campaign;
    objectiveOf(spec); // checked; Amazon has no objective field
    if (spec.budget.type !== 'daily')
      throw new ProviderError(
        'validation',
        'amazon_ads: Sponsored Products campaigns take only a daily budget (recurrenceTimePeriod DAILY)',
        'budget_type_unsupported',
      );
    const dailyBudget = toMajorUnitNumber(spec.budget.amount_micros, spec.budget.currency); // whole minor units
    const end = lifetimeEnd(this.channel, spec);
    const name = markedName(spec.name, request.dispatchId, NAME_MAX_LENGTH);
    return (marketplace) => ({
      adProduct: 'SPONSORED_PRODUCTS',
      name,
      state: 'PAUSED',
      marketplaceScope: 'SINGLE_MARKETPLACE',
      marketplaces: [marketplace],
      autoCreationSettings: { autoCreateTargets: true },
      budgets: [
        {
          budgetType: 'MONETARY',
          recurrenceTimePeriod: 'DAILY',
          budgetValue: { monetaryBudgetValue: { monetaryBudget: { value: dailyBudget } } },
        },
      ],
      startDateTime: utcSeconds(spec.schedule.start_at),
      ...(end ? { endDateTime: utcSeconds(end) } : {}),
    });
  }

  /** The headers of a call scoped to the advertiser's profile. */
  private profileHeaders(access: AccountAccess, profile: { profileId: string; accountId: string }): Record<string, string> {
    return { ...this.headers(access), 'amazon-advertising-api-scope': profile.profileId, 'amazon-ads-accountid': profile.accountId };
  }

  /** The profile of the connection's advertiser account, from `GET /v2/profiles`. */
  private async profile(access: AccountAccess): Promise<{ profileId: string; accountId: string; marketplace: string; currency: string; timezone: string }> {
    const answer = await this.http.call({ method: 'GET', url: `${this.settings.apiUrl}/v2/profiles`, headers: this.headers(access) });
    if (answer.status !== 200) throw this.refusal(answer, 'profiles read');
    const profiles = Array.isArray(answer.json) ? (answer.json as Profile[]) : [];
    const wanted = access.providerAccountId;
    const profile = profiles.find((p) => p.accountInfo?.id === wanted) ?? profiles.find((p) => String(p.profileId) === wanted);
    if (!profile)
      throw new ProviderError(
        'account_unreachable',
        `amazon_ads: no advertising profile of this token is the account ${wanted}`,
        'profile_not_found',
        answer.status,
      );
    const { currencyCode, timezone, countryCode, profileId } = profile;
    if (
      typeof currencyCode !== 'string' ||
      typeof timezone !== 'string' ||
      !isIanaTimeZone(timezone) ||
      typeof countryCode !== 'string' ||
      profileId === undefined ||
      profileId === null
    )
      throw new ProviderError('transient', 'amazon_ads answered a profile without its currency, time zone or marketplace', null, answer.status);
    const accountId = typeof profile.accountInfo?.id === 'string' ? profile.accountInfo.id : wanted;
    return { profileId: String(profileId), accountId, marketplace: MARKETPLACE_OF_COUNTRY[countryCode] ?? countryCode, currency: currencyCode, timezone };
  }

  private headers(access: AccountAccess): Record<string, string> {
    const clientId = this.settings.clientId ?? undefined;
    return {
      authorization: `Bearer ${access.accessToken}`,
      ...(clientId ? { 'amazon-advertising-api-clientid': clientId, 'amazon-ads-clientid': clientId } : {}),
    };
  }

  /** An error entry of a 207. */
  private itemRefusal(error: AmazonError, status: number): ProviderError {
    const code = typeof error.code === 'string' ? error.code : 'error';
    const message = typeof error.message === 'string' ? error.message : 'amazon_ads refused the campaign';
    if (code === 'TOO_MANY_REQUESTS') return new ProviderError('rate_limited', `amazon_ads asks to slow down: ${message}`, code, status);
    if (code === 'UNAUTHORIZED') return new ProviderError('auth', `amazon_ads refused the token: ${message}`, code, status);
    if (code === 'INTERNAL_ERROR' || code === 'CONFLICT')
      return new ProviderError('transient', `amazon_ads could not create the campaign now: ${message}`, code, status);
    if (code === 'FORBIDDEN') return new ProviderError('account_unreachable', `amazon_ads: the token cannot reach this account: ${message}`, code, status);
    return new ProviderError('validation', message, code, status);
  }

  /** An HTTP refusal, classified by Amazon's rules. */
  private refusal(answer: NetworkAnswer, what: string): ProviderError {
    const body = (Array.isArray(answer.json) ? {} : (answer.json ?? {})) as AmazonError;
    const code = typeof body.code === 'string' || typeof body.code === 'number' ? String(body.code) : null;
    const said = typeof body.message === 'string' ? body.message : typeof body.details === 'string' ? body.details : null;
    const message = said ?? `amazon_ads refused the ${what} (HTTP ${answer.status})`;
    if (answer.status === 401) return new ProviderError('auth', `amazon_ads refused the access token: ${message}`, code ?? 'UNAUTHORIZED', 401);
    if (answer.status === 429)
      return new ProviderError('rate_limited', `amazon_ads asks to slow down: ${message}`, code ?? 'TOO_MANY_REQUESTS', 429, answer.retryAfterMs);
    if (answer.status >= 500) return new ProviderError('transient', `amazon_ads failed with HTTP ${answer.status}`, code, answer.status, answer.retryAfterMs);
    if (answer.status === 403 || answer.status === 404)
      return new ProviderError(
        'account_unreachable',
        `amazon_ads: the token cannot reach this account: ${message}`,
        code ?? `http_${answer.status}`,
        answer.status,
      );
    return new ProviderError('validation', message, code ?? `http_${answer.status}`, answer.status);
  }
}

/** ISO 8601 UTC with `Z`, to the second: `2027-01-04T09:00:00Z`. */
function utcSeconds(instant: string): string {
  return new Date(instant).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
