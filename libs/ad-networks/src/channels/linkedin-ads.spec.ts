import { CampaignSpec } from '@campaign-ops/channels';
import { closeFakeNetworkDispatcher, fakeNetworkDispatcher, followConsent, refusingLoopbackUrl, unifiedCampaign, rejection } from '../../../../test/support/fake-networks';
import { LinkedinAdsFake } from '../../../../test/support/fake-networks/linkedin-ads.fake';
import { NetworkHttp } from '../network-http';
import { LinkedinAds, untilMidnightUtc } from './linkedin-ads';

const USD = '508000001';
const JPY = '508000002';
const KWD = '508000003';
const CLOSED = '508000004';
const accounts: Record<string, { currency: string; timezone: string }> = {
  [USD]: { currency: 'USD', timezone: 'UTC' },
  [JPY]: { currency: 'JPY', timezone: 'UTC' },
  [KWD]: { currency: 'KWD', timezone: 'UTC' },
  [CLOSED]: { currency: 'USD', timezone: 'UTC' },
};
/** 2026-11-25T21:30:00Z: two and a half hours before LinkedIn's quotas reset. */
const NOW = Date.UTC(2026, 10, 25, 21, 30, 0);


describe('LinkedinAds against its fake, over HTTPS', () => {
  let fake: LinkedinAdsFake;
  let linkedin: LinkedinAds;
  let token: string;

  beforeAll(async () => {
    fake = await LinkedinAdsFake.start({ accounts: Object.entries(accounts).map(([id, account]) => ({ id, ...account })) });
    fake.accountStatus.set(CLOSED, 'CANCELED');
    linkedin = new LinkedinAds(fake.settings(), new NetworkHttp('linkedin_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }), () => NOW);
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (campaign: CampaignSpec, accountId = USD) =>
    linkedin.createCampaign({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] }, { dispatchId: 'dsp_l1', campaign });
  const sent = () => fake.lastRequest(/\/adCampaigns$/).body as Record<string, any>;

  describe('OAuth', () => {
    const redirectUri = 'https://ops.example/v1/connections/oauth/callback';

    it('asks for r_ads and rw_ads, space-separated', () => {
      const url = new URL(linkedin.authorizationUrl({ state: 'st_1', redirectUri, providerAccountId: USD }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/oauth/v2/authorization`);
      expect(Object.fromEntries(url.searchParams)).toEqual({ response_type: 'code', client_id: fake.clientId, redirect_uri: redirectUri, state: 'st_1', scope: 'r_ads rw_ads' });
    });

    it('trades the code for a 60-day token and a refresh token', async () => {
      const { query } = await followConsent(linkedin.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD }));
      const before = Date.now();
      const tokens = await linkedin.exchangeCode({ code: query.code, redirectUri });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(Date.parse(tokens.expiresAt!) - before).toBeGreaterThanOrEqual(5_184_000_000 - 1000);
      expect(fake.lastRequest('/oauth/v2/accessToken').body).toEqual({ grant_type: 'authorization_code', code: query.code, redirect_uri: redirectUri, client_id: fake.clientId, client_secret: fake.clientSecret });
    });

    it('refreshes, and makes a refused refresh auth (invalid_grant)', async () => {
      const refreshToken = fake.issueRefreshToken();
      await expect(linkedin.refresh(refreshToken)).resolves.toMatchObject({ accessToken: expect.stringMatching(/^at-/), refreshToken });
      expect(fake.lastRequest('/oauth/v2/accessToken').body).toMatchObject({ grant_type: 'refresh_token', refresh_token: refreshToken });
      fake.refuseRefresh();
      try {
        await expect(linkedin.refresh(refreshToken)).rejects.toMatchObject({ kind: 'auth', providerCode: 'invalid_grant', httpStatus: 400 });
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new LinkedinAds(fake.settings({ clientSecret: 'not-the-secret' }), new NetworkHttp('linkedin_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }), () => NOW);
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_LINKEDIN_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject({ kind: 'validation', providerCode: 'invalid_client' });
    });
  });

  describe('reading the ad account', () => {
    it('reads the currency with the version headers; the time zone is UTC', async () => {
      await expect(linkedin.readAccount({ accessToken: token, providerAccountId: USD })).resolves.toEqual({ currency: 'USD', timezone: 'UTC' });
      const call = fake.lastRequest();
      expect(call.method).toBe('GET');
      expect(call.path).toBe(`/rest/adAccounts/${USD}`);
      expect(call.headers).toMatchObject({ authorization: `Bearer ${token}`, 'linkedin-version': '202605', 'x-restli-protocol-version': '2.0.0' });
    });

    it('takes the id as an URN too', async () => {
      await expect(linkedin.readAccount({ accessToken: token, providerAccountId: `urn:li:sponsoredAccount:${JPY}` })).resolves.toEqual({ currency: 'JPY', timezone: 'UTC' });
    });

    it('is account_unreachable for an account the token cannot reach (403) or one that is canceled', async () => {
      const error = await rejection(linkedin.readAccount({ accessToken: token, providerAccountId: '508999999' }));
      expect(error).toMatchObject({ kind: 'account_unreachable', providerCode: 'ACCESS_DENIED', httpStatus: 403 });
      await expect(linkedin.readAccount({ accessToken: token, providerAccountId: CLOSED })).rejects.toMatchObject({ kind: 'account_unreachable', providerCode: 'CANCELED' });
    });
  });

  describe('creating a campaign', () => {
    it('creates a campaign group, then a DRAFT campaign in it with a daily budget in major units and a schedule in epoch ms', async () => {
      const campaign = unifiedCampaign({ schedule: { end_at: '2027-02-01T00:00:00Z' } });
      const { providerResourceId } = await create(campaign);
      const group = fake.lastRequest(/\/adCampaignGroups$/);
      expect(group.path).toBe(`/rest/adAccounts/${USD}/adCampaignGroups`);
      const groupId = fake.created.find((c) => c.kind === 'campaign_group' && c.body === group.body)!.id;
      expect(group.body).toEqual({ account: `urn:li:sponsoredAccount:${USD}`, name: campaign.name, status: 'ACTIVE', runSchedule: { start: Date.UTC(2027, 0, 4, 9), end: Date.UTC(2027, 1, 1) } });
      expect(sent()).toEqual({
        account: `urn:li:sponsoredAccount:${USD}`,
        campaignGroup: `urn:li:sponsoredCampaignGroup:${groupId}`,
        name: campaign.name,
        type: 'SPONSORED_UPDATES',
        objectiveType: 'WEBSITE_CONVERSION',
        optimizationTargetType: 'MAX_CONVERSION',
        costType: 'CPM',
        dailyBudget: { amount: '12.34', currencyCode: 'USD' },
        runSchedule: { start: Date.UTC(2027, 0, 4, 9), end: Date.UTC(2027, 1, 1) },
        status: 'DRAFT',
        locale: { country: 'US', language: 'en' },
        offsiteDeliveryEnabled: false,
        politicalIntent: 'NOT_POLITICAL',
      });
      expect(providerResourceId).toBe(fake.created.at(-1)!.id);
      expect(fake.created.at(-1)!.kind).toBe('campaign');
    });

    it.each([
      ['conversion', 'WEBSITE_CONVERSION'],
      ['traffic', 'WEBSITE_VISIT'],
      ['awareness', 'BRAND_AWARENESS'],
      ['leads', 'LEAD_GENERATION'],
      ['engagement', 'ENGAGEMENT'],
    ])('maps %s to %s', async (objective, expected) => {
      await create(unifiedCampaign({ objective }));
      expect(sent().objectiveType).toBe(expected);
    });

    it('refuses app_installs before any call: LinkedIn has no such objective', async () => {
      const calls = fake.requests.length;
      await expect(create(unifiedCampaign({ objective: 'app_installs' }))).rejects.toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      expect(fake.requests.length).toBe(calls);
    });

    it('sends a lifetime budget as totalBudget', async () => {
      await create(unifiedCampaign({ budget: { type: 'lifetime', amount_micros: 900_000_000 }, schedule: { end_at: '2027-02-01T00:00:00Z' } }));
      expect(sent().totalBudget).toEqual({ amount: '900.00', currencyCode: 'USD' });
      expect(sent().dailyBudget).toBeUndefined();
    });

    it("writes the amount with the currency's decimals: USD 12.34, JPY 1500, KWD 1.250", async () => {
      await create(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_000_000 } }), JPY);
      expect(sent().dailyBudget).toEqual({ amount: '1500', currencyCode: 'JPY' });
      await create(unifiedCampaign({ budget: { currency: 'KWD', amount_micros: 1_250_000 } }), KWD);
      expect(sent().dailyBudget).toEqual({ amount: '1.250', currencyCode: 'KWD' });
      await create(unifiedCampaign({ budget: { amount_micros: 10_010_000 } }));
      expect(sent().dailyBudget).toEqual({ amount: '10.01', currencyCode: 'USD' });
    });

    it("keeps LinkedIn's input error code and description (validation)", async () => {
      const error = await rejection(create(unifiedCampaign({ budget: { amount_micros: 5_000_000 } })));
      expect(error).toMatchObject({ kind: 'validation', providerCode: 'FIELD_VALUE_TOO_LOW', httpStatus: 422, message: 'linkedin_ads: Daily budget must be at least 10 USD (dailyBudget.amount)' });
    });
  });

  describe('errors', () => {
    it('makes 401 auth', async () => {
      fake.expireToken(token);
      const error = await rejection(linkedin.readAccount({ accessToken: token, providerAccountId: USD }));
      expect(error).toMatchObject({ kind: 'auth', providerCode: 'EXPIRED_ACCESS_TOKEN', httpStatus: 401 });
      expect(error.message).not.toContain(token);
    });

    it('makes 429 rate_limited until midnight UTC, LinkedIn naming no delay', async () => {
      fake.rateLimitNext(1, 1);
      const error = await rejection(create(unifiedCampaign()));
      expect(error).toMatchObject({ kind: 'rate_limited', providerCode: 'QUOTA_EXCEEDED', httpStatus: 429, retryAfterMs: 2.5 * 3600_000 });
    });

    it('counts to the next midnight UTC, never zero', () => {
      expect(untilMidnightUtc(Date.UTC(2026, 10, 25, 0, 0, 0))).toBe(24 * 3600_000);
      expect(untilMidnightUtc(Date.UTC(2026, 11, 31, 23, 59, 59))).toBe(1000);
    });

    it.each([500, 503])('makes HTTP %i transient', async (status) => {
      fake.failNext(1, status);
      await expect(create(unifiedCampaign())).rejects.toMatchObject({ kind: 'transient', httpStatus: status });
    });

    it('is transient without a provider code when nothing listens, or nothing answers in time', async () => {
      const dispatcher = await fakeNetworkDispatcher();
      const down = new LinkedinAds({ ...fake.settings(), apiUrl: await refusingLoopbackUrl() }, new NetworkHttp('linkedin_ads', 2_000, { dispatcher }));
      await expect(down.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
      const impatient = new LinkedinAds(fake.settings(), new NetworkHttp('linkedin_ads', 300, { dispatcher }));
      fake.stallNext(1);
      await expect(impatient.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
    });
  });
});
