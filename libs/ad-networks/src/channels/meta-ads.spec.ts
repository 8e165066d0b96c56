import { CampaignSpec } from '@campaign-ops/channels';
import {
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  unifiedCampaign,
  rejection,
} from '../../../../test/support/fake-networks';
import { MetaAdsFake } from '../../../../test/support/fake-networks/meta-ads.fake';
import { NetworkHttp } from '../network-http';
import { MetaAds } from './meta-ads';

const USD = '1111111111';
const JPY = '2222222222';
const BHD = '3333333333';
const DISABLED = '4444444444';
const accounts: Record<string, { currency: string; timezone: string }> = {
  [USD]: { currency: 'USD', timezone: 'America/Los_Angeles' },
  [JPY]: { currency: 'JPY', timezone: 'Asia/Tokyo' },
  [BHD]: { currency: 'BHD', timezone: 'Asia/Bahrain' },
  [DISABLED]: { currency: 'USD', timezone: 'UTC' },
};

describe('MetaAds against its fake, over HTTPS', () => {
  let fake: MetaAdsFake;
  let meta: MetaAds;
  let token: string;

  beforeAll(async () => {
    fake = await MetaAdsFake.start({ accounts: Object.entries(accounts).map(([id, account]) => ({ id, ...account })) });
    fake.accountStatus.set(DISABLED, 2);
    meta = new MetaAds(fake.settings(), new NetworkHttp('meta_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (campaign: CampaignSpec, accountId = USD) =>
    meta.createCampaign({ accessToken: token, providerAccountId: `act_${accountId}`, account: accounts[accountId] }, { dispatchId: 'dsp_m1', campaign });
  const sent = () => fake.lastRequest(/\/campaigns$/).body as Record<string, unknown>;

  describe('OAuth', () => {
    const redirectUri = 'https://ops.example/v1/connections/oauth/callback';

    it('sends the browser to the versioned dialog with comma-separated scopes', () => {
      const url = new URL(meta.authorizationUrl({ state: 'st_1', redirectUri, providerAccountId: `act_${USD}` }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/v24.0/dialog/oauth`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        client_id: fake.clientId,
        redirect_uri: redirectUri,
        state: 'st_1',
        response_type: 'code',
        scope: 'ads_management,ads_read,business_management',
      });
    });

    it('trades the code (GET on the Graph host), then the short-lived token for a long-lived one; no refresh token', async () => {
      const { query } = await followConsent(meta.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: `act_${USD}` }));
      const before = Date.now();
      const tokens = await meta.exchangeCode({ code: query.code, redirectUri });
      const [codeCall, longCall] = fake.requestsTo('/v24.0/oauth/access_token').slice(-2);
      expect(codeCall.method).toBe('GET');
      expect(codeCall.query).toEqual({ client_id: fake.clientId, client_secret: fake.clientSecret, redirect_uri: redirectUri, code: query.code });
      expect(longCall.query).toMatchObject({ grant_type: 'fb_exchange_token', client_id: fake.clientId, client_secret: fake.clientSecret });
      expect(tokens.refreshToken).toBeNull();
      expect(Date.parse(tokens.expiresAt!) - before).toBeGreaterThan(59 * 24 * 3600_000);
      // the long-lived token is the one that works
      await expect(meta.readAccount({ accessToken: tokens.accessToken, providerAccountId: USD })).resolves.toMatchObject({ currency: 'USD' });
    });

    it("makes a refused code auth, with Meta's code", async () => {
      const error = await rejection(meta.exchangeCode({ code: 'code-never-issued', redirectUri }));
      expect(error).toMatchObject({ kind: 'auth', providerCode: '100/36009' });
    });

    it('refuses to refresh without a call: Meta issues no refresh tokens', async () => {
      const calls = fake.requests.length;
      await expect(meta.refresh('anything')).rejects.toMatchObject({ kind: 'auth', providerCode: 'no_refresh_token' });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe("this service's OAuth client refused", () => {
    it("makes a wrong app secret (code 1) or app id (code 101) at the token endpoint validation invalid_client: the operator's configuration, which no consent fixes", async () => {
      const dispatcher = await fakeNetworkDispatcher();
      for (const wrong of [{ clientSecret: 'not-the-secret' }, { clientId: '000000000000000' }]) {
        const misconfigured = new MetaAds(fake.settings(wrong), new NetworkHttp('meta_ads', 5_000, { dispatcher }));
        const refused = await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }));
        expect([refused.kind, refused.providerCode]).toEqual(['validation', 'invalid_client']);
        expect(refused.message).toContain('CHANNEL_META_ADS_CLIENT_ID');
      }
    });
  });

  describe('reading the ad account', () => {
    it('reads account_status, currency and timezone_name with the bearer token', async () => {
      await expect(meta.readAccount({ accessToken: token, providerAccountId: `act_${USD}` })).resolves.toEqual({
        currency: 'USD',
        timezone: 'America/Los_Angeles',
      });
      const call = fake.lastRequest();
      expect(call.method).toBe('GET');
      expect(call.path).toBe(`/v24.0/act_${USD}`);
      expect(call.query).toEqual({ fields: 'account_status,currency,timezone_name' });
      expect(call.headers.authorization).toBe(`Bearer ${token}`);
    });

    it('takes the id with or without act_', async () => {
      await expect(meta.readAccount({ accessToken: token, providerAccountId: JPY })).resolves.toEqual({ currency: 'JPY', timezone: 'Asia/Tokyo' });
      expect(fake.lastRequest().path).toBe(`/v24.0/act_${JPY}`);
    });

    it('is account_unreachable for an account the token cannot load (100/33)', async () => {
      const error = await rejection(meta.readAccount({ accessToken: token, providerAccountId: 'act_5555555555' }));
      expect(error).toMatchObject({ kind: 'account_unreachable', providerCode: '100/33', httpStatus: 400 });
    });

    it('is account_unreachable for a disabled account (account_status 2)', async () => {
      await expect(meta.readAccount({ accessToken: token, providerAccountId: DISABLED })).rejects.toMatchObject({
        kind: 'account_unreachable',
        providerCode: 'account_status_2',
      });
    });
  });

  describe('creating a campaign', () => {
    it("posts name, objective, PAUSED, special_ad_categories and a daily budget in cents; the id is Meta's", async () => {
      const campaign = unifiedCampaign();
      const { providerResourceId } = await create(campaign);
      const call = fake.lastRequest();
      expect(call.path).toBe(`/v24.0/act_${USD}/campaigns`);
      expect(call.headers.authorization).toBe(`Bearer ${token}`);
      expect(call.headers['content-type']).toBe('application/json');
      expect(sent()).toEqual({
        name: `${campaign.name} · dsp_m1`,
        objective: 'OUTCOME_SALES',
        status: 'PAUSED',
        special_ad_categories: [],
        daily_budget: 1234,
      });
      expect(providerResourceId).toBe(fake.created.at(-1)!.id);
    });

    it.each([
      ['conversion', 'OUTCOME_SALES'],
      ['traffic', 'OUTCOME_TRAFFIC'],
      ['awareness', 'OUTCOME_AWARENESS'],
      ['leads', 'OUTCOME_LEADS'],
      ['engagement', 'OUTCOME_ENGAGEMENT'],
      ['app_installs', 'OUTCOME_APP_PROMOTION'],
    ])('maps %s to %s', async (objective, expected) => {
      await create(unifiedCampaign({ objective }));
      expect(sent().objective).toBe(expected);
    });

    it('sends a lifetime budget as lifetime_budget, and no schedule (it lives on ad sets)', async () => {
      await create(unifiedCampaign({ budget: { type: 'lifetime', amount_micros: 900_000_000 }, schedule: { end_at: '2027-02-01T00:00:00Z' } }));
      expect(sent()).toMatchObject({ lifetime_budget: 90_000 });
      for (const field of ['daily_budget', 'start_time', 'stop_time']) expect(sent()).not.toHaveProperty(field);
    });

    it("converts to Meta's offset: USD cents, JPY whole yen, BHD with two decimals (not ISO's three)", async () => {
      await create(unifiedCampaign({ budget: { amount_micros: 7_010_000 } }));
      expect(sent().daily_budget).toBe(701);
      await create(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_000_000 } }), JPY);
      expect(sent().daily_budget).toBe(1500);
      await create(unifiedCampaign({ budget: { currency: 'BHD', amount_micros: 1_250_000 } }), BHD);
      expect(sent().daily_budget).toBe(125);
    });

    it('refuses, before any call, an amount finer than the offset (USD 12.345, JPY 1500.5, BHD 1.255)', async () => {
      const calls = fake.requests.length;
      for (const [currency, amount_micros, accountId] of [
        ['USD', 12_345_000, USD],
        ['JPY', 1_500_500_000, JPY],
        ['BHD', 1_255_000, BHD],
      ] as const) {
        const error = await rejection(create(unifiedCampaign({ budget: { currency, amount_micros } }), accountId));
        expect(error).toMatchObject({ kind: 'validation', providerCode: 'budget_not_whole_minor_units' });
      }
      expect(fake.requests.length).toBe(calls);
    });

    it('refuses KWD before any call: no Meta ad account bills in it', async () => {
      await expect(create(unifiedCampaign({ budget: { currency: 'KWD', amount_micros: 1_250_000 } }))).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'currency_unsupported',
      });
    });
  });

  describe('finding the campaigns of a dispatch again (its marker in the name)', () => {
    const find = (dispatchId: string) =>
      meta.findCampaigns({ accessToken: token, providerAccountId: `act_${USD}`, account: accounts[USD] }, { dispatchId, campaign: unifiedCampaign() });
    const launch = (dispatchId: string) =>
      meta.createCampaign({ accessToken: token, providerAccountId: `act_${USD}`, account: accounts[USD] }, { dispatchId, campaign: unifiedCampaign() });

    it("asks Meta for the account's campaigns whose name contains the dispatch id, with their creation time", async () => {
      expect(await find('dsp_none1')).toEqual([]);
      const call = fake.lastRequest();
      expect([call.method, call.path, call.headers.authorization]).toEqual(['GET', `/v24.0/act_${USD}/campaigns`, `Bearer ${token}`]);
      expect(JSON.parse(call.query.filtering)).toEqual([{ field: 'name', operator: 'CONTAIN', value: 'dsp_none1' }]);
      expect(call.query.fields.split(',')).toEqual(expect.arrayContaining(['id', 'name', 'created_time']));
    });

    it('finds the one it made', async () => {
      const { providerResourceId } = await launch('dsp_found1');
      expect(await find('dsp_found1')).toEqual([{ providerResourceId, createdAt: expect.any(String) }]);
    });

    it('finds two oldest first (Meta made it twice, then answered 503)', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      await expect(launch('dsp_twice1')).rejects.toMatchObject({ kind: 'transient' });
      const made = fake.campaignsFor('dsp_twice1').map((c) => c.id);
      expect(made).toHaveLength(2);
      expect((await find('dsp_twice1')).map((c) => c.providerResourceId)).toEqual(made);
    });

    it('ignores a campaign whose name only contains the id, or carries a longer one', async () => {
      await launch('dsp_long1X');
      await meta.createCampaign(
        { accessToken: token, providerAccountId: `act_${USD}`, account: accounts[USD] },
        { dispatchId: 'dsp_other', campaign: unifiedCampaign({ name: 'about dsp_long1 ' }) },
      );
      expect(await find('dsp_long1')).toEqual([]);
    });

    it('follows the pages', async () => {
      for (let i = 0; i < 130; i++) fake.created.push({ id: String(990_000_000 + i), accountId: USD, kind: 'campaign', body: { name: `Bulk · dsp_bulk1` } });
      expect(await find('dsp_bulk1')).toHaveLength(130);
      expect(fake.requestsTo(`/v24.0/act_${USD}/campaigns`).filter((r) => r.method === 'GET' && r.query.after)).not.toHaveLength(0);
    });

    it('is transient when Meta fails the lookup', async () => {
      fake.failNext(1, 500);
      await expect(find('dsp_none2')).rejects.toMatchObject({ kind: 'transient' });
    });
  });

  describe('the dry run (validate_only)', () => {
    const check = (campaign: CampaignSpec) =>
      meta.validateCampaign({ accessToken: token, providerAccountId: `act_${USD}`, account: accounts[USD] }, { dispatchId: 'dsp_dry1', campaign });

    it('posts the create with execution_options validate_only; Meta checks it and makes nothing', async () => {
      const made = fake.created.length;
      const campaign = unifiedCampaign();
      expect(await check(campaign)).toEqual({ checkedBy: 'provider', warnings: [] });
      const call = fake.lastRequest();
      expect([call.method, call.path]).toEqual(['POST', `/v24.0/act_${USD}/campaigns`]);
      expect(call.body).toEqual({
        name: `${campaign.name} · dsp_dry1`,
        objective: 'OUTCOME_SALES',
        status: 'PAUSED',
        special_ad_categories: [],
        daily_budget: 1234,
        execution_options: ['validate_only'],
      });
      expect(fake.created.length).toBe(made);
    });

    it("answers Meta's refusal as the create would get it", async () =>
      expect(await rejection(check(unifiedCampaign({ budget: { amount_micros: 500_000 } })))).toMatchObject({
        kind: 'validation',
        providerCode: '100/1885272',
      }));

    it('refuses before any call what the adapter knows Meta refuses', async () => {
      const calls = fake.requests.length;
      await expect(check(unifiedCampaign({ budget: { amount_micros: 12_345_000 } }))).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'budget_not_whole_minor_units',
      });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe('errors (classified by code, the status being 400)', () => {
    it('makes code 190 auth', async () => {
      fake.expireToken(token);
      const error = await rejection(create(unifiedCampaign()));
      expect(error).toMatchObject({ kind: 'auth', providerCode: '190/463', httpStatus: 400 });
      expect(error.message).not.toContain(token);
    });

    it('makes an unknown token auth (190)', async () => {
      await expect(meta.readAccount({ accessToken: 'not-a-token', providerAccountId: USD })).rejects.toMatchObject({ kind: 'auth', providerCode: '190' });
    });

    it('makes code 17 rate_limited with the business use case delay', async () => {
      fake.rateLimitNext(1, 300);
      const error = await rejection(create(unifiedCampaign()));
      expect(error).toMatchObject({ kind: 'rate_limited', providerCode: '17/2446079', retryAfterMs: 300_000 });
    });

    it.each([500, 503])('makes HTTP %i transient', async (status) => {
      fake.failNext(1, status);
      await expect(create(unifiedCampaign())).rejects.toMatchObject({ kind: 'transient', httpStatus: status });
    });

    it("keeps Meta's user message and code/subcode for a refused campaign", async () => {
      const error = await rejection(create(unifiedCampaign({ budget: { amount_micros: 500_000 } })));
      expect(error).toMatchObject({
        kind: 'validation',
        providerCode: '100/1885272',
        message: 'meta_ads: Your budget is too low. The minimum budget for this campaign is $1.00.',
      });
    });

    it('is transient without a provider code when nothing listens, or nothing answers in time', async () => {
      const dispatcher = await fakeNetworkDispatcher();
      const down = new MetaAds({ ...fake.settings(), apiUrl: await refusingLoopbackUrl() }, new NetworkHttp('meta_ads', 2_000, { dispatcher }));
      await expect(down.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
      const impatient = new MetaAds(fake.settings(), new NetworkHttp('meta_ads', 300, { dispatcher }));
      fake.stallNext(1);
      await expect(impatient.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
    });
  });
});
