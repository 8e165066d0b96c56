import { CampaignSpec } from '@campaign-ops/channels';
import {
  AmazonAdsFake,
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  rejection,
} from '../../../../test/support/fake-networks';
import { NetworkHttp } from '../network-http';
import { AmazonAds } from './amazon-ads';

const US_ACCOUNT = 'ENTITY2IHJASDJKERU';
const JP_ACCOUNT = 'A3JPSELLER0001';
const UK_ACCOUNT = 'A1UKSELLER0001';
const usd = { currency: 'USD', timezone: 'America/Los_Angeles' };
const jpy = { currency: 'JPY', timezone: 'Asia/Tokyo' };
const gbp = { currency: 'GBP', timezone: 'Europe/London' };

const campaign = (overrides: Partial<CampaignSpec> = {}): CampaignSpec => ({
  name: 'Prime day push',
  objective: 'conversion',
  budget: { amount_micros: 12_340_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2027-01-04T09:00:00.000Z', timezone: 'America/Los_Angeles' },
  ...overrides,
});

describe('AmazonAds against its fake', () => {
  let fake: AmazonAdsFake;
  let amazon: AmazonAds;
  let token: string;

  beforeAll(async () => {
    fake = await AmazonAdsFake.start({
      accounts: [
        { id: US_ACCOUNT, ...usd },
        { id: JP_ACCOUNT, ...jpy },
        { id: UK_ACCOUNT, ...gbp },
      ],
    });
    amazon = new AmazonAds(fake.settings(), new NetworkHttp('amazon_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (spec: CampaignSpec, accountId = US_ACCOUNT, account = usd, dispatchId = 'dsp_1') =>
    amazon.createCampaign({ accessToken: token, providerAccountId: accountId, account }, { dispatchId, campaign: spec });
  const find = (dispatchId: string, accountId = US_ACCOUNT) =>
    amazon.findCampaigns({ accessToken: token, providerAccountId: accountId, account: usd }, { dispatchId, campaign: campaign() });
  const validate = (spec: CampaignSpec, dispatchId = 'dsp_dry') =>
    amazon.validateCampaign({ accessToken: token, providerAccountId: US_ACCOUNT, account: usd }, { dispatchId, campaign: spec });
  const sentCampaign = () => (fake.lastRequest('/adsApi/v1/create/campaigns').body as { campaigns: Array<Record<string, any>> }).campaigns[0];

  it('can launch only with its client id (else channel_live_unavailable)', async () => {
    expect(amazon.launchUnavailableReason()).toBeNull();
    const bare = new AmazonAds(fake.settings({ clientId: null }), new NetworkHttp('amazon_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
    expect(bare.launchUnavailableReason()).toContain('CHANNEL_AMAZON_ADS_CLIENT_ID');
  });

  describe('Login with Amazon', () => {
    it('consent with the campaign-management scope; the code exchanged, then refreshed (client in the body)', async () => {
      const url = amazon.authorizationUrl({ state: 'st_1', redirectUri: 'https://ops.example/cb', providerAccountId: US_ACCOUNT });
      expect(Object.fromEntries(new URL(url).searchParams)).toEqual({
        client_id: fake.clientId,
        scope: 'advertising::campaign_management',
        response_type: 'code',
        redirect_uri: 'https://ops.example/cb',
        state: 'st_1',
      });
      const back = await followConsent(url);
      expect(back.query.state).toBe('st_1');

      const tokens = await amazon.exchangeCode({ code: back.query.code, redirectUri: 'https://ops.example/cb' });
      expect(fake.lastRequest('/auth/o2/token').body).toEqual({
        grant_type: 'authorization_code',
        code: back.query.code,
        redirect_uri: 'https://ops.example/cb',
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      const lifetime = Date.parse(tokens.expiresAt!) - Date.now();
      expect(lifetime).toBeGreaterThan(3_500_000);
      expect(lifetime).toBeLessThanOrEqual(3_600_000);

      const refreshed = await amazon.refresh(tokens.refreshToken!);
      expect(fake.lastRequest('/auth/o2/token').body).toMatchObject({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
      expect(await amazon.readAccount({ accessToken: refreshed.accessToken, providerAccountId: US_ACCOUNT })).toEqual(usd);
    });

    it('a refused refresh is auth (invalid_grant)', async () => {
      const refresh = fake.issueRefreshToken();
      fake.refuseRefresh();
      try {
        const refused = await rejection(amazon.refresh(refresh));
        expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['auth', 'invalid_grant', 400]);
        expect(refused.message).not.toContain(refresh);
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new AmazonAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('amazon_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_AMAZON_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
    });
  });

  describe('reading the account', () => {
    it('finds the profile of the advertiser account (or of a profile id): its currencyCode and timezone', async () => {
      expect(await amazon.readAccount({ accessToken: token, providerAccountId: JP_ACCOUNT })).toEqual(jpy);
      const sent = fake.lastRequest();
      expect([sent.method, sent.path, sent.headers.authorization, sent.headers['amazon-advertising-api-clientid']]).toEqual([
        'GET',
        '/v2/profiles',
        `Bearer ${token}`,
        fake.clientId,
      ]);
      expect(await amazon.readAccount({ accessToken: token, providerAccountId: String(fake.profileIdOf(UK_ACCOUNT)) })).toEqual(gbp);
    });

    it("401 is auth; an account among none of the token's profiles is account_unreachable", async () => {
      fake.expireToken(token);
      const expired = await rejection(amazon.readAccount({ accessToken: token, providerAccountId: US_ACCOUNT }));
      expect([expired.kind, expired.providerCode, expired.httpStatus]).toEqual(['auth', 'UNAUTHORIZED', 401]);
      expect(expired.message).not.toContain(token);
      const valid = fake.issueAccessToken();
      fake.denyAccount(JP_ACCOUNT, valid);
      const denied = await rejection(amazon.readAccount({ accessToken: valid, providerAccountId: JP_ACCOUNT }));
      expect([denied.kind, denied.providerCode]).toEqual(['account_unreachable', 'profile_not_found']);
    });
  });

  describe('creating a campaign', () => {
    it("posts a PAUSED Sponsored Products campaign for the profile, field by field, and answers Amazon's campaignId", async () => {
      const created = await create(
        campaign({ schedule: { start_at: '2027-01-04T09:00:00.000Z', timezone: 'America/Los_Angeles', end_at: '2027-02-01T08:00:00Z' } }),
      );
      const sent = fake.lastRequest('/adsApi/v1/create/campaigns');
      expect(sent.method).toBe('POST');
      expect(sent.headers).toMatchObject({
        authorization: `Bearer ${token}`,
        'amazon-advertising-api-clientid': fake.clientId,
        'amazon-advertising-api-scope': String(fake.profileIdOf(US_ACCOUNT)),
        'amazon-ads-accountid': US_ACCOUNT,
      });
      expect(sent.body).toEqual({
        campaigns: [
          {
            adProduct: 'SPONSORED_PRODUCTS',
            name: 'Prime day push · dsp_1',
            state: 'PAUSED',
            marketplaceScope: 'SINGLE_MARKETPLACE',
            marketplaces: ['US'],
            autoCreationSettings: { autoCreateTargets: true },
            budgets: [{ budgetType: 'MONETARY', recurrenceTimePeriod: 'DAILY', budgetValue: { monetaryBudgetValue: { monetaryBudget: { value: 12.34 } } } }],
            startDateTime: '2027-01-04T09:00:00Z',
            endDateTime: '2027-02-01T08:00:00Z',
          },
        ],
      });
      expect(created.providerResourceId).toBe(fake.created[fake.created.length - 1].id);
    });

    it.each(['conversion', 'traffic', 'awareness', 'leads', 'engagement', 'app_installs'])(
      'objective %s: Amazon has no objective field, the same campaign',
      async (objective) => {
        await create(campaign({ objective }));
        expect(sentCampaign()).toMatchObject({ adProduct: 'SPONSORED_PRODUCTS', state: 'PAUSED' });
        expect(Object.keys(sentCampaign()).some((field) => /objective|goal/i.test(field))).toBe(false);
      },
    );

    it.each([
      ['USD', 12_340_000, 12.34, 'US', US_ACCOUNT, usd],
      ['USD', 5_000_000, 5, 'US', US_ACCOUNT, usd],
      ['JPY', 1_500_000_000, 1500, 'JP', JP_ACCOUNT, jpy],
      ['GBP', 7_050_000, 7.05, 'GB', UK_ACCOUNT, gbp],
    ])('%s budget in major units: %d micros is %d (marketplace %s)', async (currency, micros, value, marketplace, accountId, account) => {
      await create(campaign({ budget: { amount_micros: micros, currency, type: 'daily' } }), accountId, account);
      expect(sentCampaign().budgets[0].budgetValue.monetaryBudgetValue.monetaryBudget.value).toBe(value);
      expect(sentCampaign().marketplaces).toEqual([marketplace]);
    });

    it("a budget finer than the currency's minor unit, or a lifetime budget, is refused before any call", async () => {
      const before = fake.requests.length;
      const fraction = await rejection(create(campaign({ budget: { amount_micros: 1_500_500_000, currency: 'JPY', type: 'daily' } }), JP_ACCOUNT, jpy));
      expect([fraction.kind, fraction.providerCode]).toEqual(['validation', 'budget_not_whole_minor_units']);
      const lifetime = await rejection(
        create(
          campaign({
            budget: { amount_micros: 100_000_000, currency: 'USD', type: 'lifetime' },
            schedule: { start_at: '2027-01-04T09:00:00Z', timezone: 'UTC', end_at: '2027-02-04T09:00:00Z' },
          }),
        ),
      );
      expect([lifetime.kind, lifetime.providerCode]).toEqual(['validation', 'budget_type_unsupported']);
      expect(fake.requests.length).toBe(before);
    });

    it("an error entry of the 207 is validation with Amazon's code and message", async () => {
      const refused = await rejection(create(campaign({ budget: { amount_micros: 50_000_000, currency: 'JPY', type: 'daily' } }), JP_ACCOUNT, jpy));
      expect([refused.kind, refused.providerCode, refused.httpStatus, refused.message]).toEqual([
        'validation',
        'FIELD_VALUE_IS_BELOW_MINIMUM_LIMIT',
        207,
        'The daily budget must be at least 100 JPY',
      ]);
    });

    it('401 is auth; a denied profile is account_unreachable', async () => {
      fake.expireToken(token);
      expect((await rejection(create(campaign()))).kind).toBe('auth');
      token = fake.issueAccessToken();
      fake.denyAccount(US_ACCOUNT, token);
      expect((await rejection(create(campaign()))).kind).toBe('account_unreachable');
    });

    it("429 is rate_limited after Amazon's Retry-After; 5xx transient; no answer transient without a code", async () => {
      fake.rateLimitNext(1, 3);
      const limited = await rejection(create(campaign()));
      expect([limited.kind, limited.providerCode, limited.retryAfterMs]).toEqual(['rate_limited', 'TOO_MANY_REQUESTS', 3_000]);
      fake.failNext(1, 500);
      const failed = await rejection(create(campaign()));
      expect([failed.kind, failed.providerCode, failed.httpStatus]).toEqual(['transient', 'INTERNAL_ERROR', 500]);

      const down = new AmazonAds(
        { ...fake.settings(), apiUrl: await refusingLoopbackUrl() },
        new NetworkHttp('amazon_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const unreachable = await rejection(down.readAccount({ accessToken: token, providerAccountId: US_ACCOUNT }));
      expect([unreachable.kind, unreachable.providerCode]).toEqual(['transient', null]);
    });
  });

  describe("the dispatch's marker, and finding a campaign again", () => {
    it("names the campaign with the marker, after the partner's name, within 128 characters", async () => {
      await create(campaign({ name: 'Deal days' }), US_ACCOUNT, usd, 'dsp_01JMARKER');
      expect(sentCampaign().name).toBe('Deal days · dsp_01JMARKER');
      await create(campaign({ name: 'L'.repeat(255) }), US_ACCOUNT, usd, 'dsp_01JMARKER');
      expect(sentCampaign().name).toBe(`${'L'.repeat(128 - ' · dsp_01JMARKER'.length)} · dsp_01JMARKER`);
    });

    it('finds nothing when no campaign carries the marker: a query by name for the profile, live campaigns only', async () => {
      expect(await find('dsp_nothing')).toEqual([]);
      const sent = fake.lastRequest('/adsApi/v1/query/campaigns');
      expect(sent.method).toBe('POST');
      expect(sent.headers).toMatchObject({
        authorization: `Bearer ${token}`,
        'amazon-advertising-api-clientid': fake.clientId,
        'amazon-advertising-api-scope': String(fake.profileIdOf(US_ACCOUNT)),
        'amazon-ads-accountid': US_ACCOUNT,
      });
      expect(sent.body).toEqual({
        adProductFilter: { include: ['SPONSORED_PRODUCTS'] },
        nameFilter: { include: ['dsp_nothing'], queryTermMatchType: 'BROAD_MATCH' },
        stateFilter: { include: ['ENABLED', 'PAUSED'] },
        maxResults: 5000,
      });
    });

    it('finds the one campaign a create made, by the id the create answered', async () => {
      const created = await create(campaign(), US_ACCOUNT, usd, 'dsp_found_one');
      expect(await find('dsp_found_one')).toEqual([
        { providerResourceId: created.providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) },
      ]);
    });

    it('finds two, oldest first, when Amazon made the campaign twice (and answered 503)', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      expect((await rejection(create(campaign(), US_ACCOUNT, usd, 'dsp_twice'))).kind).toBe('transient');
      const [older, newer] = fake.campaignsFor('dsp_twice');
      expect((await find('dsp_twice')).map((c) => c.providerResourceId)).toEqual([older.id, newer.id]);
    });

    it("ignores a name that only carries a longer id (which a broad match answers), an archived campaign, and other accounts' campaigns", async () => {
      await create(campaign(), US_ACCOUNT, usd, 'dsp_short0');
      fake.plantCampaigns(US_ACCOUNT, ['Archived · dsp_short'], 'ARCHIVED');
      await create(campaign({ budget: { amount_micros: 7_050_000, currency: 'GBP', type: 'daily' } }), UK_ACCOUNT, gbp, 'dsp_short');
      expect(await find('dsp_short')).toEqual([]);
    });

    it('follows nextToken', async () => {
      fake.plantCampaigns(
        US_ACCOUNT,
        Array.from({ length: 5_000 }, (_, i) => `Other · dsp_paged${i}`),
      );
      const created = await create(campaign(), US_ACCOUNT, usd, 'dsp_paged');
      const before = fake.requests.length;
      expect((await find('dsp_paged')).map((c) => c.providerResourceId)).toEqual([created.providerResourceId]);
      const queries = fake.requests.slice(before).filter((r) => r.path === '/adsApi/v1/query/campaigns');
      expect(queries.map((r) => (r.body as { nextToken?: string }).nextToken)).toEqual([undefined, expect.any(String)]);
    });

    it('a query answered 5xx is transient; 401 auth', async () => {
      fake.failNextCampaignQuery(503);
      const failed = await rejection(find('dsp_1'));
      expect([failed.kind, failed.providerCode, failed.httpStatus]).toEqual(['transient', 'INTERNAL_ERROR', 503]);
      fake.expireToken(token);
      expect((await rejection(find('dsp_1'))).kind).toBe('auth');
    });
  });

  describe('the dry run (Amazon has no validate-only call: the rules of a create, no call)', () => {
    it('answers checked by rules, without a request to Amazon', async () => {
      const before = [fake.requests.length, fake.created.length];
      expect(await validate(campaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect([fake.requests.length, fake.created.length]).toEqual(before);
    });

    it('a campaign a create would refuse before calling is validation, still without a request', async () => {
      const before = fake.requests.length;
      expect(
        await rejection(
          validate(
            campaign({
              budget: { amount_micros: 100_000_000, currency: 'USD', type: 'lifetime' },
              schedule: { start_at: '2027-01-04T09:00:00Z', timezone: 'UTC', end_at: '2027-02-04T09:00:00Z' },
            }),
          ),
        ),
      ).toMatchObject({
        kind: 'validation',
        providerCode: 'budget_type_unsupported',
      });
      expect(await rejection(validate(campaign({ budget: { amount_micros: 12_345_678, currency: 'USD', type: 'daily' } })))).toMatchObject({
        kind: 'validation',
        providerCode: 'budget_not_whole_minor_units',
      });
      expect(fake.requests.length).toBe(before);
    });
  });
});
