import { createHash } from 'node:crypto';
import { CampaignSpec } from '@campaign-ops/channels';
import {
  GoogleAdsFake,
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  unifiedCampaign,
  rejection,
} from '../../../../test/support/fake-networks';
import { AdNetwork } from '../ad-network.port';
import { createAdNetworks } from '../ad-networks';
import { NetworkHttp } from '../network-http';
import { loadNetworkSettings } from '../network-settings';
import { GoogleAds } from './google-ads';

const USD = '1234567890';
const JPY = '2000000002';
const KWD = '3000000003';
const UNREACHABLE = '9999999999';
const accounts = {
  [USD]: { currency: 'USD', timezone: 'America/New_York' },
  [JPY]: { currency: 'JPY', timezone: 'Asia/Tokyo' },
  [KWD]: { currency: 'KWD', timezone: 'Asia/Kuwait' },
};

describe('GoogleAds against its fake, over HTTPS', () => {
  let fake: GoogleAdsFake;
  let google: AdNetwork;
  let token: string;

  beforeAll(async () => {
    fake = await GoogleAdsFake.start({ accounts: Object.entries(accounts).map(([id, account]) => ({ id, ...account })) });
    // Built the way the service builds it: from CHANNEL_GOOGLE_ADS_* through the registry.
    const settings = loadNetworkSettings({ ...fake.env(), CHANNEL_TIMEOUT_MS: '5000' });
    google = createAdNetworks(settings, { dispatcher: await fakeNetworkDispatcher() }).google_ads;
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  /** Every launch of the spec is a dispatch of its own (its budget and campaign names carry its id). */
  let launches = 0;
  let dispatchId = '';
  const access = (accountId = USD) => ({ accessToken: token, providerAccountId: accountId, account: accounts[accountId as keyof typeof accounts] });
  const create = (campaign: CampaignSpec, accountId = USD, id = `dsp_g${++launches}`) => {
    dispatchId = id;
    return google.createCampaign(access(accountId), { dispatchId: id, campaign });
  };
  const sent = (kind: 'campaignBudgets' | 'campaigns') =>
    (fake.lastRequest(new RegExp(`/${kind}:mutate$`)).body as { operations: Array<{ create: Record<string, unknown> }> }).operations[0].create;

  it('can launch only with its developer token (else channel_live_unavailable)', async () => {
    expect(google.launchUnavailableReason?.()).toBeNull();
    const settings = loadNetworkSettings({ ...fake.env(), CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN: '' });
    const bare = createAdNetworks(settings, { dispatcher: await fakeNetworkDispatcher() }).google_ads;
    expect(bare.launchUnavailableReason?.()).toContain('CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN');
  });

  describe('OAuth', () => {
    const redirectUri = 'https://ops.example/v1/connections/oauth/callback';

    it('asks for offline access with a consent prompt, the adwords scope, the redirect and the state', () => {
      const url = new URL(google.authorizationUrl({ state: 'st_1', redirectUri, providerAccountId: USD }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/o/oauth2/v2/auth`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        client_id: fake.clientId,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'https://www.googleapis.com/auth/adwords',
        state: 'st_1',
        access_type: 'offline',
        prompt: 'consent',
        include_granted_scopes: 'true',
      });
    });

    it('trades the code the consent page gave for tokens, posting the form Google expects', async () => {
      const consent = await followConsent(google.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD }));
      expect(consent.query.state).toBe('st_2');
      const before = Date.now();
      const tokens = await google.exchangeCode({ code: consent.query.code, redirectUri });
      expect(tokens.accessToken).toMatch(/^at-/);
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(Date.parse(tokens.expiresAt!)).toBeGreaterThanOrEqual(before + 3599_000);
      const sentForm = fake.lastRequest('/token');
      expect(sentForm.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(sentForm.body).toEqual({
        grant_type: 'authorization_code',
        code: consent.query.code,
        redirect_uri: redirectUri,
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });
    });

    it('takes PKCE: the S256 challenge on the consent page, its verifier with the code; a code without its verifier is refused', async () => {
      expect(google.pkce).toBe(true);
      const verifier = 'v'.repeat(43);
      const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
      const url = new URL(google.authorizationUrl({ state: 'st_p', redirectUri, providerAccountId: USD, codeChallenge }));
      expect([url.searchParams.get('code_challenge'), url.searchParams.get('code_challenge_method')]).toEqual([codeChallenge, 'S256']);
      const first = await followConsent(url.toString());
      expect(await rejection(google.exchangeCode({ code: first.query.code, redirectUri }))).toMatchObject({ kind: 'auth', providerCode: 'invalid_grant' });
      const second = await followConsent(url.toString());
      expect(await rejection(google.exchangeCode({ code: second.query.code, redirectUri, codeVerifier: 'w'.repeat(43) }))).toMatchObject({
        kind: 'auth',
        providerCode: 'invalid_grant',
      });
      const third = await followConsent(url.toString());
      expect((await google.exchangeCode({ code: third.query.code, redirectUri, codeVerifier: verifier })).accessToken).toMatch(/^at-/);
      expect(fake.lastRequest('/token').body).toMatchObject({ grant_type: 'authorization_code', code_verifier: verifier });
    });

    it('refuses a code already used as auth (invalid_grant)', async () => {
      const { query } = await followConsent(google.authorizationUrl({ state: 'st_3', redirectUri, providerAccountId: USD }));
      await google.exchangeCode({ code: query.code, redirectUri });
      const error = await rejection(google.exchangeCode({ code: query.code, redirectUri }));
      expect(error).toMatchObject({ kind: 'auth', providerCode: 'invalid_grant', httpStatus: 400 });
    });

    it('refreshes with grant_type=refresh_token', async () => {
      const refreshToken = fake.issueRefreshToken();
      const tokens = await google.refresh(refreshToken);
      expect(tokens.accessToken).toMatch(/^at-/);
      expect(tokens.refreshToken).toBeNull(); // Google answers none: the one on file is kept
      expect(fake.lastRequest('/token').body).toEqual({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });
    });

    it('makes a refused refresh auth with invalid_grant, and never puts the token in the message', async () => {
      const refreshToken = fake.issueRefreshToken();
      fake.refuseRefresh();
      try {
        const error = await rejection(google.refresh(refreshToken));
        expect(error).toMatchObject({ kind: 'auth', providerCode: 'invalid_grant' });
        expect(error.message).not.toContain(refreshToken);
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = createAdNetworks(
        loadNetworkSettings({ ...fake.env(), CHANNEL_GOOGLE_ADS_CLIENT_SECRET: 'not-the-secret', CHANNEL_TIMEOUT_MS: '5000' }),
        { dispatcher: await fakeNetworkDispatcher() },
      ).google_ads;
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_GOOGLE_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
    });
  });

  describe('reading the ad account', () => {
    it('searches the customer resource and answers its currency and IANA time zone', async () => {
      await expect(google.readAccount({ accessToken: token, providerAccountId: '123-456-7890' })).resolves.toEqual({
        currency: 'USD',
        timezone: 'America/New_York',
      });
      const call = fake.lastRequest();
      expect(call.method).toBe('POST');
      expect(call.path).toBe(`/v23/customers/${USD}/googleAds:search`);
      expect(call.headers.authorization).toBe(`Bearer ${token}`);
      expect(call.headers['developer-token']).toBe(fake.developerToken);
      expect(call.headers['login-customer-id']).toBeUndefined();
      expect(call.body).toEqual({ query: 'SELECT customer.id, customer.currency_code, customer.time_zone FROM customer' });
    });

    it('names the manager account in login-customer-id for "<manager>/<customer>"', async () => {
      await google.readAccount({ accessToken: token, providerAccountId: `555-000-1111/${JPY}` });
      expect(fake.lastRequest().path).toBe(`/v23/customers/${JPY}/googleAds:search`);
      expect(fake.lastRequest().headers['login-customer-id']).toBe('5550001111');
    });

    it('is account_unreachable for a customer the token cannot reach', async () => {
      const error = await rejection(google.readAccount({ accessToken: token, providerAccountId: UNREACHABLE }));
      expect(error).toMatchObject({ kind: 'account_unreachable', providerCode: 'USER_PERMISSION_DENIED', httpStatus: 403 });
    });

    it('is account_unreachable, without a call, for an id that is no customer id', async () => {
      const calls = fake.requests.length;
      await expect(google.readAccount({ accessToken: token, providerAccountId: 'act_12' })).rejects.toMatchObject({ kind: 'account_unreachable' });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe('creating a campaign', () => {
    it('creates a daily budget in micros, then a PAUSED campaign that references it; the id is the campaign id', async () => {
      const campaign = unifiedCampaign();
      const { providerResourceId } = await create(campaign);
      const budget = sent('campaignBudgets');
      expect(budget).toEqual({
        name: `${campaign.name} budget · ${dispatchId}`,
        period: 'DAILY',
        amountMicros: '12340000',
        deliveryMethod: 'STANDARD',
        explicitlyShared: false,
      });
      const budgetResource = fake.created.find((c) => c.kind === 'campaign_budget' && c.body === budget);
      expect(budgetResource).toBeDefined();
      const created = sent('campaigns');
      expect(created).toEqual({
        name: `${campaign.name} · ${dispatchId}`,
        status: 'PAUSED',
        advertisingChannelType: 'SEARCH',
        campaignBudget: `customers/${USD}/campaignBudgets/${budgetResource!.id}`,
        maximizeConversions: {},
        networkSettings: { targetGoogleSearch: true, targetSearchNetwork: true, targetContentNetwork: false },
        startDateTime: '2027-01-04 04:00:00', // 09:00 UTC in New York (EST)
        containsEuPoliticalAdvertising: 'DOES_NOT_CONTAIN_EU_POLITICAL_ADVERTISING',
      });
      expect(providerResourceId).toMatch(/^\d+$/);
      expect(fake.created.at(-1)).toMatchObject({ id: providerResourceId, kind: 'campaign', accountId: USD });
    });

    it.each([
      ['conversion', 'SEARCH', 'maximizeConversions'],
      ['leads', 'SEARCH', 'maximizeConversions'],
      ['traffic', 'SEARCH', 'targetSpend'],
      ['awareness', 'DISPLAY', 'manualCpm'],
      ['engagement', 'DISPLAY', 'targetSpend'],
    ])('maps %s (no objective field) to a %s campaign bidding with %s', async (objective, channelType, bidding) => {
      await create(unifiedCampaign({ objective }));
      const created = sent('campaigns');
      expect(created.advertisingChannelType).toBe(channelType);
      expect(created[bidding]).toEqual({});
      expect('networkSettings' in created).toBe(channelType === 'SEARCH');
    });

    it('refuses app_installs before any call: an app campaign needs an app the unified campaign does not carry', async () => {
      const calls = fake.requests.length;
      const error = await rejection(create(unifiedCampaign({ objective: 'app_installs' })));
      expect(error).toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      expect(fake.requests.length).toBe(calls);
    });

    it('makes a lifetime budget a custom-period total, and gives the campaign its end in the account time zone', async () => {
      await create(unifiedCampaign({ budget: { type: 'lifetime', amount_micros: 500_000_000 }, schedule: { end_at: '2027-02-01T04:59:59Z' } }));
      expect(sent('campaignBudgets')).toMatchObject({ period: 'CUSTOM_PERIOD', totalAmountMicros: '500000000' });
      expect(sent('campaignBudgets').amountMicros).toBeUndefined();
      expect(sent('campaigns')).toMatchObject({ startDateTime: '2027-01-04 04:00:00', endDateTime: '2027-01-31 23:59:59' });
    });

    it('refuses a lifetime budget without an end before any call', async () => {
      const calls = fake.requests.length;
      await expect(create(unifiedCampaign({ budget: { type: 'lifetime' } }))).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'lifetime_budget_needs_end',
      });
      expect(fake.requests.length).toBe(calls);
    });

    it('passes micros through in every currency: JPY, KWD, USD', async () => {
      await create(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_000_000 } }), JPY);
      expect(sent('campaignBudgets').amountMicros).toBe('1500000000');
      expect(sent('campaigns').startDateTime).toBe('2027-01-04 18:00:00'); // Tokyo, UTC+9
      await create(unifiedCampaign({ budget: { currency: 'KWD', amount_micros: 1_250_000 } }), KWD);
      expect(sent('campaignBudgets').amountMicros).toBe('1250000');
      await create(unifiedCampaign({ budget: { currency: 'USD', amount_micros: 7_010_000 } }));
      expect(sent('campaignBudgets').amountMicros).toBe('7010000');
    });

    it("passes Google's refusal of an amount finer than the currency's unit back as validation, with its code", async () => {
      const error = await rejection(create(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_500_000 } }), JPY));
      expect(error).toMatchObject({ kind: 'validation', providerCode: 'NON_MULTIPLE_OF_MINIMUM_CURRENCY_UNIT', httpStatus: 400 });
      expect(error.message).toContain('multiple of the minimum currency unit');
    });
  });

  describe('at most one campaign per dispatch', () => {
    const find = (id: string) => google.findCampaigns(access(), { dispatchId: id, campaign: unifiedCampaign() });

    it("finds the dispatch's campaign with GAQL on the campaign name, not removed", async () => {
      const { providerResourceId } = await create(unifiedCampaign());
      expect(await find(dispatchId)).toEqual([{ providerResourceId, createdAt: null }]);
      const call = fake.lastRequest(/googleAds:search$/);
      expect(call.body).toEqual({
        query: `SELECT campaign.id, campaign.name FROM campaign WHERE campaign.name LIKE '%${dispatchId}%' AND campaign.status != 'REMOVED'`,
      });
      expect(await find('dsp_gnone')).toEqual([]);
    });

    it('finds two oldest first (by id: Google hands them out rising), and ignores a longer id', async () => {
      await create(unifiedCampaign(), USD, 'dsp_gtwiceX');
      // Two with the marker (as two racing creates could leave them), planted out of order.
      fake.created.push(
        { id: '1', accountId: USD, kind: 'campaign', body: { name: 'Old · dsp_gtwice' } },
        { id: '999999999999', accountId: USD, kind: 'campaign', body: { name: 'New · dsp_gtwice' } },
      );
      expect((await find('dsp_gtwice')).map((c) => c.providerResourceId)).toEqual(['1', '999999999999']);
    });

    it('follows the pages of a search', async () => {
      for (let i = 0; i < 120; i++) fake.created.push({ id: String(5_000_000 + i), accountId: USD, kind: 'campaign', body: { name: `Bulk ${i} · dsp_gbulk` } });
      expect(await find('dsp_gbulk')).toHaveLength(120);
      expect(fake.requestsTo(/googleAds:search$/).filter((r) => (r.body as { pageToken?: string }).pageToken)).not.toHaveLength(0);
    });

    it('reuses the budget an earlier try made (DUPLICATE_NAME): one budget, one campaign', async () => {
      const campaign = unifiedCampaign();
      fake.afterNextCreate('campaign_budget', { kind: 'fail', status: 503 });
      await expect(create(campaign, USD, 'dsp_gbudget')).rejects.toMatchObject({ kind: 'transient' });
      const { providerResourceId } = await create(campaign, USD, 'dsp_gbudget');
      const budgets = fake.created.filter((c) => c.kind === 'campaign_budget' && JSON.stringify(c.body).includes('dsp_gbudget'));
      expect(budgets).toHaveLength(1);
      expect(sent('campaigns').campaignBudget).toBe(`customers/${USD}/campaignBudgets/${budgets[0].id}`);
      expect(fake.campaignsFor('dsp_gbudget').map((c) => c.id)).toEqual([providerResourceId]);
    });

    it('answers the campaign that exists when Google refuses a second one of the name (DUPLICATE_CAMPAIGN_NAME): found, not made', async () => {
      const campaign = unifiedCampaign();
      const first = await create(campaign, USD, 'dsp_gdup');
      const again = await create(campaign, USD, 'dsp_gdup');
      expect(again).toEqual({ providerResourceId: first.providerResourceId, found: true });
      expect(fake.campaignsFor('dsp_gdup')).toHaveLength(1);
    });

    it('is transient when the lookup fails', async () => {
      fake.failNext(1, 503);
      await expect(find('dsp_gnone')).rejects.toMatchObject({ kind: 'transient' });
    });
  });

  describe('the dry run (validateOnly)', () => {
    const check = (campaign: CampaignSpec, accountId = USD) => google.validateCampaign(access(accountId), { dispatchId: 'dsp_gdry', campaign });

    it('sends one googleAds:mutate with validateOnly: the budget under a temporary name and the campaign referring to it; nothing is made', async () => {
      const made = fake.created.length;
      const campaign = unifiedCampaign();
      expect(await check(campaign)).toEqual({ checkedBy: 'provider', warnings: [] });
      const call = fake.lastRequest(/googleAds:mutate$/);
      expect(call.path).toBe(`/v23/customers/${USD}/googleAds:mutate`);
      expect(call.headers['developer-token']).toBe(fake.developerToken);
      const temporary = `customers/${USD}/campaignBudgets/-1`;
      expect(call.body).toEqual({
        mutateOperations: [
          {
            campaignBudgetOperation: {
              create: {
                resourceName: temporary,
                name: `${campaign.name} budget · dsp_gdry`,
                period: 'DAILY',
                amountMicros: '12340000',
                deliveryMethod: 'STANDARD',
                explicitlyShared: false,
              },
            },
          },
          {
            campaignOperation: {
              create: {
                name: `${campaign.name} · dsp_gdry`,
                status: 'PAUSED',
                advertisingChannelType: 'SEARCH',
                campaignBudget: temporary,
                maximizeConversions: {},
                networkSettings: { targetGoogleSearch: true, targetSearchNetwork: true, targetContentNetwork: false },
                startDateTime: '2027-01-04 04:00:00',
                containsEuPoliticalAdvertising: 'DOES_NOT_CONTAIN_EU_POLITICAL_ADVERTISING',
              },
            },
          },
        ],
        validateOnly: true,
      });
      expect(fake.created.length).toBe(made);
    });

    it("answers Google's refusal as the create would get it", async () =>
      expect(await rejection(check(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_500_000 } }), JPY))).toMatchObject({
        kind: 'validation',
        providerCode: 'NON_MULTIPLE_OF_MINIMUM_CURRENCY_UNIT',
      }));

    it('refuses before any call what the adapter knows Google refuses', async () => {
      const calls = fake.requests.length;
      await expect(check(unifiedCampaign({ objective: 'app_installs' }))).rejects.toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe('errors', () => {
    it('makes an expired token auth (OAUTH_TOKEN_EXPIRED)', async () => {
      fake.expireToken(token);
      const error = await rejection(google.readAccount({ accessToken: token, providerAccountId: USD }));
      expect(error).toMatchObject({ kind: 'auth', providerCode: 'OAUTH_TOKEN_EXPIRED', httpStatus: 401 });
      expect(error.message).not.toContain(token);
    });

    it("makes RESOURCE_EXHAUSTED rate_limited with Google's retryDelay", async () => {
      fake.rateLimitNext(1, 42);
      const error = await rejection(google.readAccount({ accessToken: token, providerAccountId: USD }));
      expect(error).toMatchObject({ kind: 'rate_limited', providerCode: 'RESOURCE_TEMPORARILY_EXHAUSTED', httpStatus: 429, retryAfterMs: 42_000 });
    });

    it.each([500, 503])('makes HTTP %i transient', async (status) => {
      fake.failNext(1, status);
      await expect(create(unifiedCampaign())).rejects.toMatchObject({ kind: 'transient', httpStatus: status });
    });

    it("keeps Google's message and code for a refused campaign (validation)", async () => {
      const error = await rejection(create(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_500_000 } }), JPY));
      expect(error).toMatchObject({
        kind: 'validation',
        providerCode: 'NON_MULTIPLE_OF_MINIMUM_CURRENCY_UNIT',
        httpStatus: 400,
        message: 'google_ads: The budget amount must be a multiple of the minimum currency unit.',
      });
    });

    it("makes a developer token Google refuses validation, not auth: the partner's grant is fine", async () => {
      const misconfigured = new GoogleAds(
        { ...fake.settings(), developerToken: 'revoked-dev-token' },
        new NetworkHttp('google_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const error = await rejection(misconfigured.readAccount({ accessToken: token, providerAccountId: USD }));
      expect(error).toMatchObject({ kind: 'validation', providerCode: 'DEVELOPER_TOKEN_INVALID', httpStatus: 401 });
    });

    it('is transient without a provider code when nothing listens', async () => {
      const down = new GoogleAds(
        { ...fake.settings(), apiUrl: await refusingLoopbackUrl() },
        new NetworkHttp('google_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      await expect(down.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
    });

    it('is transient without a provider code when Google does not answer in time', async () => {
      const impatient = new GoogleAds(fake.settings(), new NetworkHttp('google_ads', 300, { dispatcher: await fakeNetworkDispatcher() }));
      fake.stallNext(1);
      const error = await rejection(impatient.readAccount({ accessToken: token, providerAccountId: USD }));
      expect(error).toMatchObject({ kind: 'transient', providerCode: null });
      expect(error.message).toContain('300 ms');
    });
  });
});
