import { CampaignSpec } from '@campaign-ops/channels';
import {
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  unifiedCampaign,
  rejection,
} from '../../../../test/support/fake-networks';
import { TiktokAdsFake } from '../../../../test/support/fake-networks/tiktok-ads.fake';
import { NetworkHttp } from '../network-http';
import { TiktokAds } from './tiktok-ads';

const USD = '7000000000000000001';
const JPY = '7000000000000000002';
const KWD = '7000000000000000003';
const accounts: Record<string, { currency: string; timezone: string }> = {
  [USD]: { currency: 'USD', timezone: 'America/Los_Angeles' },
  [JPY]: { currency: 'JPY', timezone: 'Asia/Tokyo' },
  [KWD]: { currency: 'KWD', timezone: 'Etc/GMT-3' },
};

describe('TiktokAds against its fake, over HTTPS', () => {
  let fake: TiktokAdsFake;
  let tiktok: TiktokAds;
  let token: string;

  beforeAll(async () => {
    fake = await TiktokAdsFake.start({ accounts: Object.entries(accounts).map(([id, account]) => ({ id, ...account })) });
    tiktok = new TiktokAds(fake.settings(), new NetworkHttp('tiktok_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const usd50 = (overrides: Parameters<typeof unifiedCampaign>[0] = {}) =>
    unifiedCampaign({ ...overrides, budget: { amount_micros: 50_000_000, ...overrides.budget } });
  const create = (campaign: CampaignSpec, accountId = USD) =>
    tiktok.createCampaign({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] }, { dispatchId: 'dsp_t1', campaign });
  const sent = () => fake.lastRequest('/open_api/v1.3/campaign/create/').body as Record<string, unknown>;

  describe('OAuth', () => {
    const redirectUri = 'https://ops.example/v1/connections/oauth/callback';

    it("sends the browser to the portal with app_id, state and redirect (no scopes: they are the app's)", () => {
      const url = new URL(tiktok.authorizationUrl({ state: 'st_1', redirectUri, providerAccountId: USD }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/portal/auth`);
      expect(Object.fromEntries(url.searchParams)).toEqual({ app_id: fake.clientId, state: 'st_1', redirect_uri: redirectUri });
      expect(tiktok.scopes).toEqual([]);
    });

    it('trades auth_code with a JSON post for a long-term token: no expiry, no refresh token', async () => {
      const { query } = await followConsent(tiktok.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD }));
      expect(query.auth_code).toBe(query.code);
      const tokens = await tiktok.exchangeCode({ code: query.code, redirectUri });
      expect(tokens).toEqual({ accessToken: expect.stringMatching(/^tt/), refreshToken: null, expiresAt: null });
      const call = fake.lastRequest('/open_api/v1.3/oauth2/access_token/');
      expect(call.method).toBe('POST');
      expect(call.headers['content-type']).toBe('application/json');
      expect(call.body).toEqual({ app_id: fake.clientId, secret: fake.clientSecret, auth_code: query.code });
    });

    it('makes a refused auth_code auth, even though TikTok answers HTTP 200', async () => {
      const error = await rejection(tiktok.exchangeCode({ code: 'never-issued', redirectUri }));
      expect(error).toMatchObject({ kind: 'auth', httpStatus: 200 });
    });

    it('refuses to refresh without a call: TikTok issues no refresh tokens', async () => {
      const calls = fake.requests.length;
      await expect(tiktok.refresh('anything')).rejects.toMatchObject({ kind: 'auth', providerCode: 'no_refresh_token' });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe("this service's OAuth client refused", () => {
    it("makes a wrong app secret at the token call validation invalid_client: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new TiktokAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('tiktok_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }));
      expect([refused.kind, refused.providerCode]).toEqual(['validation', 'invalid_client']);
      expect(refused.message).toContain('CHANNEL_TIKTOK_ADS_CLIENT_ID');
    });
  });

  describe('reading the ad account', () => {
    it('asks advertiser/info for the advertiser with the Access-Token header; currency and IANA time zone', async () => {
      await expect(tiktok.readAccount({ accessToken: token, providerAccountId: USD })).resolves.toEqual({ currency: 'USD', timezone: 'America/Los_Angeles' });
      const call = fake.lastRequest();
      expect(call.method).toBe('GET');
      expect(call.path).toBe('/open_api/v1.3/advertiser/info/');
      expect(JSON.parse(call.query.advertiser_ids)).toEqual([USD]);
      expect(JSON.parse(call.query.fields)).toEqual(expect.arrayContaining(['currency', 'timezone']));
      expect(call.headers['access-token']).toBe(token);
      expect(call.headers.authorization).toBeUndefined();
    });

    it('keeps an Etc/GMT zone, which is IANA', async () => {
      await expect(tiktok.readAccount({ accessToken: token, providerAccountId: KWD })).resolves.toEqual({ currency: 'KWD', timezone: 'Etc/GMT-3' });
    });

    it('is account_unreachable for an advertiser the token was not granted (code 40001)', async () => {
      const error = await rejection(tiktok.readAccount({ accessToken: token, providerAccountId: '7999999999999999999' }));
      expect(error).toMatchObject({ kind: 'account_unreachable', providerCode: '40001', httpStatus: 200 });
    });
  });

  describe('creating a campaign', () => {
    it("posts advertiser, name, objective and a daily budget in major units; the id is TikTok's campaign_id", async () => {
      const campaign = usd50();
      const { providerResourceId } = await create(campaign);
      expect(sent()).toEqual({
        advertiser_id: USD,
        campaign_name: `${campaign.name} · dsp_t1`,
        objective_type: 'WEB_CONVERSIONS',
        budget_mode: 'BUDGET_MODE_DAY',
        budget: 50,
      });
      expect(fake.lastRequest().headers['access-token']).toBe(token);
      expect(providerResourceId).toBe(fake.created.at(-1)!.id);
    });

    it.each([
      ['conversion', 'WEB_CONVERSIONS'],
      ['traffic', 'TRAFFIC'],
      ['awareness', 'REACH'],
      ['leads', 'LEAD_GENERATION'],
      ['engagement', 'ENGAGEMENT'],
      ['app_installs', 'APP_PROMOTION'],
    ])('maps %s to %s', async (objective, expected) => {
      await create(usd50({ objective }));
      expect(sent().objective_type).toBe(expected);
      expect(sent().app_promotion_type).toBe(objective === 'app_installs' ? 'APP_INSTALL' : undefined);
    });

    it('makes a lifetime budget BUDGET_MODE_TOTAL; no schedule is sent (it lives on ad groups)', async () => {
      await create(usd50({ budget: { type: 'lifetime', amount_micros: 1_234_560_000 }, schedule: { end_at: '2027-02-01T00:00:00Z' } }));
      expect(sent()).toMatchObject({ budget_mode: 'BUDGET_MODE_TOTAL', budget: 1234.56 });
      for (const field of ['schedule_start_time', 'schedule_end_time', 'start_time']) expect(sent()).not.toHaveProperty(field);
    });

    it('writes major units exactly per currency: USD 20.01, JPY 1500, KWD 1.25', async () => {
      await create(usd50({ budget: { amount_micros: 20_010_000 } }));
      expect(fake.lastRequest().rawBody).toContain('"budget":20.01');
      await create(usd50({ budget: { currency: 'JPY', amount_micros: 1_500_000_000 } }), JPY);
      expect(sent().budget).toBe(1500);
      await create(usd50({ budget: { currency: 'KWD', amount_micros: 1_250_000 } }), KWD);
      expect(sent().budget).toBe(1.25);
    });

    it('refuses, before any call, an amount finer than the currency (JPY 1500.5)', async () => {
      const calls = fake.requests.length;
      await expect(create(usd50({ budget: { currency: 'JPY', amount_micros: 1_500_500_000 } }), JPY)).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'budget_not_whole_minor_units',
      });
      expect(fake.requests.length).toBe(calls);
    });

    it("keeps TikTok's message and code for a refused campaign (below the daily minimum)", async () => {
      const error = await rejection(create(unifiedCampaign()));
      expect(error).toMatchObject({
        kind: 'validation',
        providerCode: '40002',
        httpStatus: 200,
        message: 'tiktok_ads: The daily budget of the campaign must be at least 20.00 USD.',
      });
    });
  });

  describe("the dispatch's marker, and finding its campaigns again", () => {
    const access = (accountId = USD) => ({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] });
    const launch = (dispatchId: string, campaign = usd50()) => tiktok.createCampaign(access(), { dispatchId, campaign });
    const find = (dispatchId: string) => tiktok.findCampaigns(access(), { dispatchId, campaign: usd50() });
    const lookups = () => fake.requestsTo('/open_api/v1.3/campaign/get/');

    it("shortens the partner's part, never the marker, to TikTok's 512 characters (a CJK character counting two)", async () => {
      await launch('dsp_tlong1', usd50({ name: 'x'.repeat(600) }));
      expect(sent().campaign_name).toBe(`${'x'.repeat(512 - ' · dsp_tlong1'.length)} · dsp_tlong1`);
      await launch('dsp_tlong2', usd50({ name: '春'.repeat(300) }));
      expect(sent().campaign_name).toBe(`${'春'.repeat((512 - ' · dsp_tlong2'.length) >> 1)} · dsp_tlong2`);
    });

    it("asks campaign/get for the advertiser's campaigns whose name contains the dispatch id, a page of 1000: none", async () => {
      expect(await find('dsp_tnone1')).toEqual([]);
      const call = lookups().at(-1)!;
      expect([call.method, call.headers['access-token'], call.headers.authorization]).toEqual(['GET', token, undefined]);
      expect(call.query.advertiser_id).toBe(USD);
      expect(JSON.parse(call.query.filtering)).toEqual({ campaign_name: 'dsp_tnone1' });
      expect(JSON.parse(call.query.fields)).toEqual(expect.arrayContaining(['campaign_id', 'campaign_name', 'create_time']));
      expect([call.query.page, call.query.page_size]).toEqual(['1', '1000']);
    });

    it('finds the one it made, with its create_time (UTC) as ISO 8601', async () => {
      const { providerResourceId } = await launch('dsp_tfound1');
      expect(await find('dsp_tfound1')).toEqual([{ providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/) }]);
    });

    it('finds two oldest first (TikTok made it twice, then answered 5xx): same second, so by id', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      await expect(launch('dsp_ttwice1')).rejects.toMatchObject({ kind: 'transient' });
      const made = fake.campaignsFor('dsp_ttwice1').map((c) => c.id);
      expect(made).toHaveLength(2);
      expect((await find('dsp_ttwice1')).map((c) => c.providerResourceId)).toEqual(made);
    });

    it('orders by create_time before id', async () => {
      const later = fake.plantCampaign(USD, 'Made later · dsp_torder1', '2026-06-02 10:00:00');
      const earlier = fake.plantCampaign(USD, 'Made earlier · dsp_torder1', '2026-06-01 10:00:00');
      expect(await find('dsp_torder1')).toEqual([
        { providerResourceId: earlier, createdAt: '2026-06-01T10:00:00Z' },
        { providerResourceId: later, createdAt: '2026-06-02T10:00:00Z' },
      ]);
    });

    it('ignores a campaign whose name carries a longer id, or has the id elsewhere than its end', async () => {
      await launch('dsp_tnear1X');
      fake.plantCampaign(USD, 'About dsp_tnear1 and more', '2026-06-01 10:00:00');
      expect(await find('dsp_tnear1')).toEqual([]);
    });

    it('follows page_info.total_page', async () => {
      for (let i = 0; i < 1005; i++) fake.plantCampaign(USD, `Bulk ${i} · dsp_tbulk1`, '2026-06-01 10:00:00');
      expect(await find('dsp_tbulk1')).toHaveLength(1005);
      expect(
        lookups()
          .slice(-2)
          .map((call) => call.query.page),
      ).toEqual(['1', '2']);
    });

    it('is transient when TikTok fails the lookup (5xx)', async () => {
      fake.failNext(1, 503);
      await expect(find('dsp_tnone2')).rejects.toMatchObject({ kind: 'transient', httpStatus: 503 });
    });

    it('is auth when the token is refused on the lookup, as on any call', async () => {
      fake.expireToken(token);
      await expect(find('dsp_tnone3')).rejects.toMatchObject({ kind: 'auth', providerCode: '40102' });
    });
  });

  describe('the dry run (no validate-only call at TikTok: the rules)', () => {
    const check = (campaign: CampaignSpec, accountId = USD) =>
      tiktok.validateCampaign({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] }, { dispatchId: 'dsp_tdry1', campaign });

    it('checks the body a create would send without any call', async () => {
      const calls = fake.requests.length;
      expect(await check(usd50())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect(await check(usd50({ objective: 'app_installs', budget: { type: 'lifetime' } }))).toEqual({ checkedBy: 'rules', warnings: [] });
      expect(fake.requests.length).toBe(calls);
    });

    it('refuses what a create would refuse before its call, as validation', async () => {
      const calls = fake.requests.length;
      await expect(check(usd50({ budget: { currency: 'JPY', amount_micros: 1_500_500_000 } }), JPY)).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'budget_not_whole_minor_units',
      });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe('errors (HTTP 200 with a non-zero code)', () => {
    it('makes 40102 (expired) auth', async () => {
      fake.expireToken(token);
      const error = await rejection(create(usd50()));
      expect(error).toMatchObject({ kind: 'auth', providerCode: '40102', httpStatus: 200 });
      expect(error.message).not.toContain(token);
    });

    it('makes 40105 (unknown token) auth', async () => {
      await expect(tiktok.readAccount({ accessToken: 'revoked', providerAccountId: USD })).rejects.toMatchObject({ kind: 'auth', providerCode: '40105' });
    });

    it('makes 40100 rate_limited; TikTok names no delay', async () => {
      fake.rateLimitNext(1, 5);
      const error = await rejection(create(usd50()));
      expect(error).toMatchObject({ kind: 'rate_limited', providerCode: '40100', retryAfterMs: null });
    });

    it.each([500, 503])('makes HTTP %i transient', async (status) => {
      fake.failNext(1, status);
      await expect(create(usd50())).rejects.toMatchObject({ kind: 'transient', httpStatus: status });
    });

    it('is transient without a provider code when nothing listens, or nothing answers in time', async () => {
      const dispatcher = await fakeNetworkDispatcher();
      const down = new TiktokAds({ ...fake.settings(), apiUrl: await refusingLoopbackUrl() }, new NetworkHttp('tiktok_ads', 2_000, { dispatcher }));
      await expect(down.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
      const impatient = new TiktokAds(fake.settings(), new NetworkHttp('tiktok_ads', 300, { dispatcher }));
      fake.stallNext(1);
      await expect(impatient.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
    });
  });
});
