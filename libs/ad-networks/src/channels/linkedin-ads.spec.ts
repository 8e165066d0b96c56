import { CampaignSpec } from '@campaign-ops/channels';
import {
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  unifiedCampaign,
  rejection,
} from '../../../../test/support/fake-networks';
import { LinkedinAdsFake } from '../../../../test/support/fake-networks/linkedin-ads.fake';
import { NetworkHttp } from '../network-http';
import { LinkedinAds, restliNameSearch, untilMidnightUtc } from './linkedin-ads';

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
      expect(Object.fromEntries(url.searchParams)).toEqual({
        response_type: 'code',
        client_id: fake.clientId,
        redirect_uri: redirectUri,
        state: 'st_1',
        scope: 'r_ads rw_ads',
      });
    });

    it('trades the code for a 60-day token and a refresh token', async () => {
      const { query } = await followConsent(linkedin.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD }));
      const before = Date.now();
      const tokens = await linkedin.exchangeCode({ code: query.code, redirectUri });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(Date.parse(tokens.expiresAt!) - before).toBeGreaterThanOrEqual(5_184_000_000 - 1000);
      expect(fake.lastRequest('/oauth/v2/accessToken').body).toEqual({
        grant_type: 'authorization_code',
        code: query.code,
        redirect_uri: redirectUri,
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });
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
      const misconfigured = new LinkedinAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('linkedin_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
        () => NOW,
      );
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_LINKEDIN_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
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
      await expect(linkedin.readAccount({ accessToken: token, providerAccountId: `urn:li:sponsoredAccount:${JPY}` })).resolves.toEqual({
        currency: 'JPY',
        timezone: 'UTC',
      });
    });

    it('is account_unreachable for an account the token cannot reach (403) or one that is canceled', async () => {
      const error = await rejection(linkedin.readAccount({ accessToken: token, providerAccountId: '508999999' }));
      expect(error).toMatchObject({ kind: 'account_unreachable', providerCode: 'ACCESS_DENIED', httpStatus: 403 });
      await expect(linkedin.readAccount({ accessToken: token, providerAccountId: CLOSED })).rejects.toMatchObject({
        kind: 'account_unreachable',
        providerCode: 'CANCELED',
      });
    });
  });

  describe('creating a campaign', () => {
    it("looks for the dispatch's campaign group, creates it, then a DRAFT campaign in it with a daily budget in major units and a schedule in epoch ms", async () => {
      const campaign = unifiedCampaign({ schedule: { end_at: '2027-02-01T00:00:00Z' } });
      const calls = fake.requests.length;
      const { providerResourceId } = await create(campaign);
      expect(fake.requests.slice(calls).map((r) => `${r.method} ${r.path}`)).toEqual([
        `GET /rest/adAccounts/${USD}/adCampaignGroups`,
        `POST /rest/adAccounts/${USD}/adCampaignGroups`,
        `POST /rest/adAccounts/${USD}/adCampaigns`,
      ]);
      expect(fake.requests[calls].query).toEqual({ q: 'search', search: `(name:(values:List(${campaign.name} · dsp_l1)))`, pageSize: '1000' });
      const group = fake.lastRequest(/\/adCampaignGroups$/);
      const groupId = fake.created.find((c) => c.kind === 'campaign_group' && c.body === group.body)!.id;
      expect(group.body).toEqual({
        account: `urn:li:sponsoredAccount:${USD}`,
        name: `${campaign.name} · dsp_l1`,
        status: 'ACTIVE',
        runSchedule: { start: Date.UTC(2027, 0, 4, 9), end: Date.UTC(2027, 1, 1) },
      });
      expect(sent()).toEqual({
        account: `urn:li:sponsoredAccount:${USD}`,
        campaignGroup: `urn:li:sponsoredCampaignGroup:${groupId}`,
        name: `${campaign.name} · dsp_l1`,
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
      expect(error).toMatchObject({
        kind: 'validation',
        providerCode: 'FIELD_VALUE_TOO_LOW',
        httpStatus: 422,
        message: 'linkedin_ads: Daily budget must be at least 10 USD (dailyBudget.amount)',
      });
    });
  });

  describe("the dispatch's marker, and finding its campaign (and group) again", () => {
    const access = (accountId = USD) => ({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] });
    const launch = (dispatchId: string, campaign: CampaignSpec) => linkedin.createCampaign(access(), { dispatchId, campaign });
    const find = (dispatchId: string, campaign: CampaignSpec) => linkedin.findCampaigns(access(), { dispatchId, campaign });
    const campaignSearches = () => fake.requestsTo(`/rest/adAccounts/${USD}/adCampaigns`).filter((r) => r.method === 'GET');

    it("shortens the partner's part, never the marker, to 255 bytes of UTF-8", async () => {
      await launch('dsp_llong1', unifiedCampaign({ name: 'x'.repeat(300) }));
      expect(sent().name).toBe(`${'x'.repeat(241)} · dsp_llong1`);
      expect(Buffer.byteLength(sent().name)).toBe(255);
    });

    it('writes the search criterion the Rest.li way: the structure as is, the name encoded once (%20 for a space, its reserved characters escaped)', () => {
      expect(restliNameSearch("Q1 (EU), 50%: it's · dsp_1")).toBe('(name:(values:List(Q1%20%28EU%29%2C%2050%25%3A%20it%27s%20%C2%B7%20dsp_1)))');
    });

    it("searches the account's campaigns by the whole marked name, a page of 1000: none", async () => {
      const campaign = unifiedCampaign();
      expect(await find('dsp_lnone1', campaign)).toEqual([]);
      const call = campaignSearches().at(-1)!;
      expect([call.headers.authorization, call.headers['linkedin-version'], call.headers['x-restli-protocol-version']]).toEqual([
        `Bearer ${token}`,
        '202605',
        '2.0.0',
      ]);
      expect(call.query).toEqual({ q: 'search', search: `(name:(values:List(${campaign.name} · dsp_lnone1)))`, pageSize: '1000' });
    });

    it('finds the one it made, with its creation time', async () => {
      const campaign = unifiedCampaign();
      const { providerResourceId } = await launch('dsp_lfound1', campaign);
      expect(await find('dsp_lfound1', campaign)).toEqual([{ providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) }]);
    });

    it('finds two oldest first (LinkedIn made it twice, then answered 503)', async () => {
      const campaign = unifiedCampaign();
      fake.afterNextCreate('campaign', { kind: 'twice' });
      await expect(launch('dsp_ltwice1', campaign)).rejects.toMatchObject({ kind: 'transient' });
      const made = fake.campaignsFor('dsp_ltwice1').map((c) => c.id);
      expect(made).toHaveLength(2);
      expect((await find('dsp_ltwice1', campaign)).map((c) => c.providerResourceId)).toEqual(made);
    });

    it('orders by creation time before id, and leaves a deleted campaign out', async () => {
      const name = 'Planted · dsp_lorder1';
      const later = fake.plantCampaign(USD, name, Date.UTC(2026, 5, 2));
      const earlier = fake.plantCampaign(USD, name, Date.UTC(2026, 5, 1));
      fake.plantCampaign(USD, name, Date.UTC(2026, 4, 1), 'REMOVED');
      expect(await find('dsp_lorder1', unifiedCampaign({ name: 'Planted' }))).toEqual([
        { providerResourceId: earlier, createdAt: '2026-06-01T00:00:00.000Z' },
        { providerResourceId: later, createdAt: '2026-06-02T00:00:00.000Z' },
      ]);
    });

    it('ignores a campaign whose name carries a longer id', async () => {
      const campaign = unifiedCampaign();
      await launch('dsp_lnear1X', campaign);
      expect(await find('dsp_lnear1', campaign)).toEqual([]);
    });

    it('follows metadata.nextPageToken', async () => {
      for (let i = 0; i < 1005; i++) fake.plantCampaign(USD, 'Bulk · dsp_lbulk1', Date.UTC(2026, 5, 1) + i);
      expect(await find('dsp_lbulk1', unifiedCampaign({ name: 'Bulk' }))).toHaveLength(1005);
      expect(campaignSearches().at(-1)!.query.pageToken).toEqual(expect.any(String));
    });

    it('is transient when LinkedIn fails the lookup (5xx)', async () => {
      fake.failNext(1, 503);
      await expect(find('dsp_lnone2', unifiedCampaign())).rejects.toMatchObject({ kind: 'transient', httpStatus: 503 });
    });

    it('reuses the campaign group an earlier try of the dispatch left: one group, its campaign in it', async () => {
      const campaign = unifiedCampaign();
      fake.afterNextCreate('campaign_group', { kind: 'fail', status: 503 }); // made, then 503: the try does not know
      await expect(launch('dsp_lgroup1', campaign)).rejects.toMatchObject({ kind: 'transient' });
      const { providerResourceId } = await launch('dsp_lgroup1', campaign);
      const groups = fake.created.filter((c) => c.kind === 'campaign_group' && JSON.stringify(c.body).includes('dsp_lgroup1'));
      expect(groups).toHaveLength(1);
      expect(sent().campaignGroup).toBe(`urn:li:sponsoredCampaignGroup:${groups[0].id}`);
      expect(fake.campaignsFor('dsp_lgroup1').map((c) => c.id)).toEqual([providerResourceId]);
    });
  });

  describe('the dry run (no validate-only call at LinkedIn: the rules)', () => {
    const check = (campaign: CampaignSpec, accountId = USD) =>
      linkedin.validateCampaign({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] }, { dispatchId: 'dsp_ldry1', campaign });

    it('checks the bodies a create would send without any call', async () => {
      const calls = fake.requests.length;
      expect(await check(unifiedCampaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect(fake.requests.length).toBe(calls);
    });

    it('refuses what a create would refuse before its calls, as validation', async () => {
      const calls = fake.requests.length;
      await expect(check(unifiedCampaign({ objective: 'app_installs' }))).rejects.toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      await expect(check(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_500_000 } }), JPY)).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'budget_not_whole_minor_units',
      });
      expect(fake.requests.length).toBe(calls);
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
