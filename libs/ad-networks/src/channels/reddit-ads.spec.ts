import { request } from 'undici';
import { CampaignSpec } from '@campaign-ops/channels';
import { RedditAdsFake, closeFakeNetworkDispatcher, fakeNetworkDispatcher, refusingLoopbackUrl, rejection } from '../../../../test/support/fake-networks';
import { NetworkHttp } from '../network-http';
import { RedditAds } from './reddit-ads';

const USD_ACCOUNT = 'a2_jcfwvnfcfqcs';
const EUR_ACCOUNT = 't2_8kx2mb01';
const usd = { currency: 'USD', timezone: 'America/Chicago' };
const eur = { currency: 'EUR', timezone: 'Europe/Berlin' };

const campaign = (overrides: Partial<CampaignSpec> = {}): CampaignSpec => ({
  name: 'Launch week',
  objective: 'conversion',
  budget: { amount_micros: 40_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2027-05-01T16:00:00.000Z', timezone: 'America/Chicago' },
  ...overrides,
});

describe('RedditAds against its fake', () => {
  let fake: RedditAdsFake;
  let reddit: RedditAds;
  let token: string;

  beforeAll(async () => {
    fake = await RedditAdsFake.start({
      accounts: [
        { id: USD_ACCOUNT, ...usd },
        { id: EUR_ACCOUNT, ...eur },
      ],
    });
    reddit = new RedditAds(fake.settings(), new NetworkHttp('reddit_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (spec: CampaignSpec, accountId = USD_ACCOUNT, account = usd, dispatchId = 'dsp_1') =>
    reddit.createCampaign({ accessToken: token, providerAccountId: accountId, account }, { dispatchId, campaign: spec });
  const find = (dispatchId: string, accountId = USD_ACCOUNT) =>
    reddit.findCampaigns({ accessToken: token, providerAccountId: accountId, account: usd }, { dispatchId, campaign: campaign() });
  const validate = (spec: CampaignSpec, dispatchId = 'dsp_dry') =>
    reddit.validateCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId, campaign: spec });
  const sentData = () => (fake.lastRequest(/\/campaigns$/).body as { data: Record<string, unknown> }).data;

  describe('OAuth', () => {
    it('asks for a permanent grant with comma-separated ads scopes', () => {
      const url = new URL(reddit.authorizationUrl({ state: 'st_1', redirectUri: 'https://ops.example/cb', providerAccountId: USD_ACCOUNT }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/api/v1/authorize`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        client_id: fake.clientId,
        response_type: 'code',
        state: 'st_1',
        redirect_uri: 'https://ops.example/cb',
        duration: 'permanent',
        scope: 'adsread,adsedit',
      });
    });

    it('exchanges the code with the client as HTTP Basic and our User-Agent; a refresh keeps the refresh token on file', async () => {
      const redirectUri = 'https://ops.example/cb';
      const consent = await request(reddit.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD_ACCOUNT }), {
        dispatcher: await fakeNetworkDispatcher(),
      });
      await consent.body.dump();
      const code = new URL(String(consent.headers.location)).searchParams.get('code')!;

      const tokens = await reddit.exchangeCode({ code, redirectUri });
      const grant = fake.lastRequest('/api/v1/access_token');
      expect(grant.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString('base64')}`);
      expect(grant.headers['user-agent']).toMatch(/^campaign-ops\//);
      expect(grant.body).toEqual({ grant_type: 'authorization_code', code, redirect_uri: redirectUri });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(Date.parse(tokens.expiresAt!) - Date.now()).toBeGreaterThan(86_000_000);

      const refreshed = await reddit.refresh(tokens.refreshToken!);
      expect(fake.lastRequest('/api/v1/access_token').body).toEqual({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
      expect(refreshed.refreshToken).toBeNull();
      expect(await reddit.readAccount({ accessToken: refreshed.accessToken, providerAccountId: USD_ACCOUNT })).toEqual(usd);
    });

    it('invalid_grant, even under HTTP 200, is auth; so is a refused refresh', async () => {
      const code = await rejection(reddit.exchangeCode({ code: 'never-issued', redirectUri: 'https://ops.example/cb' }));
      expect([code.kind, code.providerCode, code.httpStatus]).toEqual(['auth', 'invalid_grant', 200]);
      const refresh = fake.issueRefreshToken();
      fake.refuseRefresh();
      try {
        const refused = await rejection(reddit.refresh(refresh));
        expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['auth', 'invalid_grant', 400]);
        expect(refused.message).not.toContain(refresh);
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new RedditAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('reddit_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_REDDIT_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
    });
  });

  describe('reading the ad account', () => {
    it('answers data.currency and data.time_zone_id, with the Bearer token and our User-Agent', async () => {
      expect(await reddit.readAccount({ accessToken: token, providerAccountId: EUR_ACCOUNT })).toEqual(eur);
      const sent = fake.lastRequest();
      expect([sent.method, sent.path, sent.headers.authorization]).toEqual(['GET', `/api/v3/ad_accounts/${EUR_ACCOUNT}`, `Bearer ${token}`]);
      expect(sent.headers['user-agent']).toMatch(/^campaign-ops\//);
    });

    it('401 is auth; 403 and 404 are account_unreachable', async () => {
      fake.expireToken(token);
      const expired = await rejection(reddit.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([expired.kind, expired.providerCode, expired.httpStatus]).toEqual(['auth', 'unauthorized', 401]);
      expect(expired.message).not.toContain(token);
      const valid = fake.issueAccessToken();
      fake.denyAccount(EUR_ACCOUNT, valid);
      const denied = await rejection(reddit.readAccount({ accessToken: valid, providerAccountId: EUR_ACCOUNT }));
      expect([denied.kind, denied.providerCode]).toEqual(['account_unreachable', 'FORBIDDEN']);
      expect((await rejection(reddit.readAccount({ accessToken: valid, providerAccountId: 'a2_nope' }))).kind).toBe('account_unreachable');
    });
  });

  describe('creating a campaign', () => {
    it("maps the unified campaign field by field into {data} and answers Reddit's id", async () => {
      const created = await create(
        campaign({ schedule: { start_at: '2027-05-01T16:00:00.000Z', timezone: 'America/Chicago', end_at: '2027-06-01T05:00:00Z' } }),
      );
      const sent = fake.lastRequest(/\/campaigns$/);
      expect([sent.method, sent.path, sent.headers.authorization, sent.headers['content-type']]).toEqual([
        'POST',
        `/api/v3/ad_accounts/${USD_ACCOUNT}/campaigns`,
        `Bearer ${token}`,
        'application/json',
      ]);
      expect(sent.body).toEqual({
        data: {
          name: 'Launch week · dsp_1',
          objective: 'CONVERSIONS',
          configured_status: 'PAUSED',
          is_campaign_budget_optimization: true,
          goal_type: 'DAILY_SPEND',
          goal_value: 40_000_000,
          bid_strategy: 'MAXIMIZE_VOLUME',
          bid_type: 'CPC',
          start_time: '2027-05-01T16:00:00Z',
          end_time: '2027-06-01T05:00:00Z',
        },
      });
      expect(created.providerResourceId).toBe(fake.created[fake.created.length - 1].id);
    });

    it.each([
      ['conversion', 'CONVERSIONS', 'CPC'],
      ['traffic', 'CLICKS', 'CPC'],
      ['awareness', 'IMPRESSIONS', 'CPM'],
      ['engagement', 'CLICKS', 'CPC'],
      ['leads', 'LEAD_GENERATION', 'CPC'],
      ['app_installs', 'APP_INSTALLS', 'CPC'],
    ])('objective %s is %s, billed %s', async (objective, redditObjective, bidType) => {
      await create(campaign({ objective }));
      expect([sentData().objective, sentData().bid_type]).toEqual([redditObjective, bidType]);
    });

    it('a lifetime budget is a LIFETIME_SPEND goal with its end time', async () => {
      await create(
        campaign({
          budget: { amount_micros: 900_000_000, currency: 'USD', type: 'lifetime' },
          schedule: { start_at: '2027-05-01T16:00:00Z', timezone: 'UTC', end_at: '2027-05-31T16:00:00Z' },
        }),
      );
      expect(sentData()).toMatchObject({ goal_type: 'LIFETIME_SPEND', goal_value: 900_000_000, end_time: '2027-05-31T16:00:00Z' });
    });

    it.each([
      ['USD', USD_ACCOUNT, usd, 7_250_000],
      ['EUR', EUR_ACCOUNT, eur, 1_000_001],
    ])('passes %s micros through unchanged as goal_value', async (currency, accountId, account, micros) => {
      await create(campaign({ budget: { amount_micros: micros, currency, type: 'daily' } }), accountId, account);
      expect(sentData().goal_value).toBe(micros);
    });

    it("Reddit's 400 is validation with its message and code", async () => {
      const refused = await rejection(create(campaign({ schedule: { start_at: '2027-05-01T16:00:00Z', timezone: 'UTC', end_at: '2027-04-01T16:00:00Z' } })));
      expect([refused.kind, refused.providerCode, refused.httpStatus, refused.message]).toEqual([
        'validation',
        'INVALID_INPUT',
        400,
        'end_time: must be after start_time',
      ]);
    });

    it('401 is auth, 403 account_unreachable', async () => {
      fake.expireToken(token);
      expect((await rejection(create(campaign()))).kind).toBe('auth');
      token = fake.issueAccessToken();
      fake.denyAccount(USD_ACCOUNT, token);
      expect((await rejection(create(campaign()))).kind).toBe('account_unreachable');
    });

    it('429 is rate_limited after the RateLimit reset; 5xx transient; no answer transient without a code', async () => {
      fake.rateLimitNext(1, 12);
      const limited = await rejection(create(campaign()));
      expect([limited.kind, limited.providerCode, limited.retryAfterMs]).toEqual(['rate_limited', 'TOO_MANY_REQUESTS', 12_000]);
      fake.failNext(1, 502);
      expect([(await rejection(create(campaign()))).kind]).toEqual(['transient']);

      const down = new RedditAds(
        { ...fake.settings(), apiUrl: await refusingLoopbackUrl() },
        new NetworkHttp('reddit_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const unreachable = await rejection(
        down.createCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId: 'dsp_2', campaign: campaign() }),
      );
      expect([unreachable.kind, unreachable.providerCode]).toEqual(['transient', null]);
    });
  });

  describe("the dispatch's marker, and finding a campaign again", () => {
    it("names the campaign with the marker, after the partner's name", async () => {
      await create(campaign({ name: 'Go' }), USD_ACCOUNT, usd, 'dsp_01JMARKER');
      expect(sentData().name).toBe('Go · dsp_01JMARKER');
    });

    it('finds nothing when no campaign carries the marker, asking for pages of 1000 with our User-Agent', async () => {
      expect(await find('dsp_nothing')).toEqual([]);
      const sent = fake.lastRequest(/\/campaigns$/);
      expect([sent.method, sent.path, sent.headers.authorization, sent.query]).toEqual([
        'GET',
        `/api/v3/ad_accounts/${USD_ACCOUNT}/campaigns`,
        `Bearer ${token}`,
        { 'page.size': '1000' },
      ]);
      expect(sent.headers['user-agent']).toMatch(/^campaign-ops\//);
    });

    it('finds the one campaign a create made, by the id the create answered', async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_found_one');
      expect(await find('dsp_found_one')).toEqual([
        { providerResourceId: created.providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) },
      ]);
    });

    it('finds two, oldest first, when Reddit made the campaign twice (and answered 503)', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      expect((await rejection(create(campaign(), USD_ACCOUNT, usd, 'dsp_twice'))).kind).toBe('transient');
      const [older, newer] = fake.campaignsFor('dsp_twice');
      expect((await find('dsp_twice')).map((c) => c.providerResourceId)).toEqual([older.id, newer.id]);
    });

    it('ignores a campaign whose name only carries a longer id, and campaigns of other ad accounts', async () => {
      await create(campaign(), USD_ACCOUNT, usd, 'dsp_short0');
      await create(campaign({ budget: { amount_micros: 40_000_000, currency: 'EUR', type: 'daily' } }), EUR_ACCOUNT, eur, 'dsp_short');
      expect(await find('dsp_short')).toEqual([]);
    });

    it("follows pagination.next_url's page.token, on our own API URL", async () => {
      fake.plantCampaigns(
        USD_ACCOUNT,
        Array.from({ length: 1_000 }, (_, i) => `Someone else's campaign ${i}`),
      );
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_paged');
      const before = fake.requests.length;
      expect((await find('dsp_paged')).map((c) => c.providerResourceId)).toEqual([created.providerResourceId]);
      const pages = fake.requests.slice(before);
      expect(pages.map((r) => r.query)).toEqual([{ 'page.size': '1000' }, { 'page.size': '1000', 'page.token': expect.any(String) }]);
    });

    it('a lookup answered 5xx is transient; 401 auth', async () => {
      fake.failNext(1, 503);
      const failed = await rejection(find('dsp_1'));
      expect([failed.kind, failed.httpStatus]).toEqual(['transient', 503]);
      fake.expireToken(token);
      expect((await rejection(find('dsp_1'))).kind).toBe('auth');
    });
  });

  describe('the dry run (Reddit has no validate-only call: the rules of a create, no call)', () => {
    it('answers checked by rules, without a request to Reddit', async () => {
      const before = [fake.requests.length, fake.created.length];
      expect(await validate(campaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect([fake.requests.length, fake.created.length]).toEqual(before);
    });

    it('a campaign a create would refuse before calling is validation, still without a request', async () => {
      const before = fake.requests.length;
      expect(await rejection(validate(campaign({ budget: { amount_micros: 900_000_000, currency: 'USD', type: 'lifetime' } })))).toMatchObject({
        kind: 'validation',
        providerCode: 'lifetime_budget_needs_end',
      });
      expect(await rejection(validate(campaign({ budget: { amount_micros: 0.5, currency: 'USD', type: 'daily' } })))).toMatchObject({
        kind: 'validation',
        providerCode: 'budget_invalid',
      });
      expect(fake.requests.length).toBe(before);
    });
  });
});
