import { request } from 'undici';
import { CampaignSpec } from '@campaign-ops/channels';
import { closeFakeNetworkDispatcher, fakeNetworkDispatcher, refusingLoopbackUrl, rejection } from '../../../../test/support/fake-networks';
import { SnapchatAdsFake } from '../../../../test/support/fake-networks/snapchat-ads.fake';
import { NetworkHttp } from '../network-http';
import { SnapchatAds } from './snapchat-ads';

const USD_ACCOUNT = 'f3c5a1e2-0000-4000-8000-00000000a001';
const EUR_ACCOUNT = 'f3c5a1e2-0000-4000-8000-00000000a002';

const campaign = (overrides: Partial<CampaignSpec> = {}): CampaignSpec => ({
  name: 'Spring launch',
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2027-01-04T17:00:00Z', timezone: 'America/New_York' },
  ...overrides,
});

describe('SnapchatAds against its fake', () => {
  let fake: SnapchatAdsFake;
  let snap: SnapchatAds;
  let token: string;
  const usd = { currency: 'USD', timezone: 'America/Los_Angeles' };

  beforeAll(async () => {
    fake = await SnapchatAdsFake.start({
      accounts: [
        { id: USD_ACCOUNT, ...usd },
        { id: EUR_ACCOUNT, currency: 'EUR', timezone: 'Europe/Paris' },
      ],
    });
    snap = new SnapchatAds(fake.settings(), new NetworkHttp('snapchat_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (spec: CampaignSpec, accountId = USD_ACCOUNT, account = usd, dispatchId = 'dsp_1') =>
    snap.createCampaign({ accessToken: token, providerAccountId: accountId, account }, { dispatchId, campaign: spec });
  const find = (dispatchId: string, accountId = USD_ACCOUNT) =>
    snap.findCampaigns({ accessToken: token, providerAccountId: accountId, account: usd }, { dispatchId, campaign: campaign() });
  const validate = (spec: CampaignSpec, dispatchId = 'dsp_dry') =>
    snap.validateCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId, campaign: spec });
  const sentCampaign = () => (fake.lastRequest(/\/campaigns$/).body as { campaigns: Array<Record<string, unknown>> }).campaigns[0];

  describe('OAuth', () => {
    it('sends the browser to the consent page with the client id, scope, redirect and state', () => {
      const url = new URL(
        snap.authorizationUrl({ state: 'st_1', redirectUri: 'https://ops.example/v1/connections/oauth/callback', providerAccountId: USD_ACCOUNT }),
      );
      expect(url.origin + url.pathname).toBe(`${fake.url}/login/oauth2/authorize`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        client_id: fake.clientId,
        redirect_uri: 'https://ops.example/v1/connections/oauth/callback',
        response_type: 'code',
        scope: 'snapchat-marketing-api',
        state: 'st_1',
      });
    });

    it('exchanges the code from the consent for an access and a refresh token, then refreshes', async () => {
      const redirectUri = 'https://ops.example/v1/connections/oauth/callback';
      const consent = await request(snap.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD_ACCOUNT }), {
        dispatcher: await fakeNetworkDispatcher(),
      });
      await consent.body.dump();
      const back = new URL(String(consent.headers.location));
      expect(back.searchParams.get('state')).toBe('st_2');

      const tokens = await snap.exchangeCode({ code: back.searchParams.get('code')!, redirectUri });
      expect(tokens.accessToken).toMatch(/^at-/);
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(Date.parse(tokens.expiresAt!) - Date.now()).toBeGreaterThan(3500_000);
      const grant = fake.lastRequest('/login/oauth2/access_token').body as Record<string, string>;
      expect(grant).toEqual({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code'),
        redirect_uri: redirectUri,
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });

      const refreshed = await snap.refresh(tokens.refreshToken!);
      expect(refreshed.accessToken).not.toBe(tokens.accessToken);
      expect(fake.lastRequest('/login/oauth2/access_token').body).toMatchObject({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
      expect(await snap.readAccount({ accessToken: refreshed.accessToken, providerAccountId: USD_ACCOUNT })).toEqual(usd);
    });

    it('a refused code or refresh is auth (re-authenticate)', async () => {
      const code = await rejection(snap.exchangeCode({ code: 'code-never-issued', redirectUri: 'https://ops.example/cb' }));
      expect([code.kind, code.providerCode]).toEqual(['auth', 'invalid_grant']);
      const refresh = fake.issueRefreshToken();
      fake.refuseRefresh();
      try {
        const refused = await rejection(snap.refresh(refresh));
        expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['auth', 'invalid_grant', 400]);
        expect(refused.message).not.toContain(refresh);
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new SnapchatAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('snapchat_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_SNAPCHAT_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
    });
  });

  describe('reading the ad account', () => {
    it('answers the currency and IANA time zone, with the Bearer token', async () => {
      expect(await snap.readAccount({ accessToken: token, providerAccountId: EUR_ACCOUNT })).toEqual({ currency: 'EUR', timezone: 'Europe/Paris' });
      const sent = fake.lastRequest();
      expect([sent.method, sent.path, sent.headers.authorization]).toEqual(['GET', `/v1/adaccounts/${EUR_ACCOUNT}`, `Bearer ${token}`]);
    });

    it('an expired or unknown token is auth; an account the token cannot reach is account_unreachable', async () => {
      fake.expireToken(token);
      const expired = await rejection(snap.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([expired.kind, expired.httpStatus]).toEqual(['auth', 401]);
      expect(expired.message).not.toContain(token);
      expect((await rejection(snap.readAccount({ accessToken: 'at-never-issued', providerAccountId: USD_ACCOUNT }))).kind).toBe('auth');

      const valid = fake.issueAccessToken();
      fake.denyAccount(EUR_ACCOUNT, valid);
      const denied = await rejection(snap.readAccount({ accessToken: valid, providerAccountId: EUR_ACCOUNT }));
      expect([denied.kind, denied.httpStatus]).toEqual(['account_unreachable', 403]);
      const unknown = await rejection(snap.readAccount({ accessToken: valid, providerAccountId: 'no-such-account' }));
      expect([unknown.kind, unknown.providerCode]).toEqual(['account_unreachable', 'E3003']);
    });
  });

  describe('creating a campaign', () => {
    it("maps the unified campaign field by field and answers Snap's campaign id", async () => {
      const created = await create(campaign({ schedule: { start_at: '2027-01-04T17:00:00Z', timezone: 'America/New_York', end_at: '2027-02-01T08:00:00Z' } }));
      const sent = fake.lastRequest(/\/campaigns$/);
      expect([sent.method, sent.path, sent.headers.authorization, sent.headers['content-type']]).toEqual([
        'POST',
        `/v1/adaccounts/${USD_ACCOUNT}/campaigns`,
        `Bearer ${token}`,
        'application/json',
      ]);
      expect(sentCampaign()).toEqual({
        ad_account_id: USD_ACCOUNT,
        name: 'Spring launch · dsp_1',
        status: 'PAUSED',
        objective_v2_properties: { objective_v2_type: 'SALES' },
        start_time: '2027-01-04T09:00:00-08:00',
        end_time: '2027-02-01T00:00:00-08:00',
        daily_budget_micro: 50_000_000,
      });
      expect(created.providerResourceId).toBe(fake.created[fake.created.length - 1].id);
      expect(created.providerResourceId).toMatch(/^[0-9a-f-]{36}$/);
    });

    it.each([
      ['conversion', 'SALES'],
      ['traffic', 'TRAFFIC'],
      ['awareness', 'AWARENESS_AND_ENGAGEMENT'],
      ['engagement', 'AWARENESS_AND_ENGAGEMENT'],
      ['leads', 'LEADS'],
      ['app_installs', 'APP_PROMOTION'],
    ])('objective %s is objective_v2_type %s', async (objective, snapType) => {
      await create(campaign({ objective }));
      expect(sentCampaign().objective_v2_properties).toEqual({ objective_v2_type: snapType });
      expect(sentCampaign()).not.toHaveProperty('objective');
    });

    it('a lifetime budget is lifetime_spend_cap_micro, with the end time', async () => {
      await create(
        campaign({
          budget: { amount_micros: 300_000_000, currency: 'USD', type: 'lifetime' },
          schedule: { start_at: '2027-07-01T07:00:00Z', timezone: 'UTC', end_at: '2027-07-31T07:00:00Z' },
        }),
      );
      const sent = sentCampaign();
      expect(sent.lifetime_spend_cap_micro).toBe(300_000_000);
      expect(sent).not.toHaveProperty('daily_budget_micro');
      expect([sent.start_time, sent.end_time]).toEqual(['2027-07-01T00:00:00-07:00', '2027-07-31T00:00:00-07:00']);
    });

    it.each([
      ['USD', USD_ACCOUNT, usd, 25_123_456],
      ['EUR', EUR_ACCOUNT, { currency: 'EUR', timezone: 'Europe/Paris' }, 7_000_001],
    ])('passes %s micros through unchanged (Snap takes micro-currency in every currency it bills)', async (currency, accountId, account, micros) => {
      await create(campaign({ budget: { amount_micros: micros, currency, type: 'daily' } }), accountId, account);
      expect(sentCampaign().daily_budget_micro).toBe(micros);
    });

    it("writes the schedule with the ad account's offset (daylight saving included)", async () => {
      await create(
        campaign({ budget: { amount_micros: 30_000_000, currency: 'EUR', type: 'daily' }, schedule: { start_at: '2027-07-01T12:30:00Z', timezone: 'UTC' } }),
        EUR_ACCOUNT,
        { currency: 'EUR', timezone: 'Europe/Paris' },
      );
      expect(sentCampaign().start_time).toBe('2027-07-01T14:30:00+02:00');
    });

    it("Snap's refusal is validation with Snap's own message and code", async () => {
      const refused = await rejection(create(campaign({ budget: { amount_micros: 5_000_000, currency: 'USD', type: 'daily' } })));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'E1008', 400]);
      expect(refused.message).toBe('The campaign daily budget or lifetime spend cap must be at least 20.00 USD');
    });

    it('an expired token is auth, a denied account is account_unreachable', async () => {
      fake.expireToken(token);
      expect((await rejection(create(campaign()))).kind).toBe('auth');
      token = fake.issueAccessToken();
      fake.denyAccount(USD_ACCOUNT, token);
      expect((await rejection(create(campaign()))).kind).toBe('account_unreachable');
    });

    it("429 is rate_limited with the network's delay, or one rate window when it names none", async () => {
      fake.rateLimitNext(1, 7);
      const named = await rejection(create(campaign()));
      expect([named.kind, named.httpStatus, named.retryAfterMs]).toEqual(['rate_limited', 429, 7_000]);
      fake.rateLimitNext(1, 0);
      expect((await rejection(create(campaign()))).retryAfterMs).toBe(1_000);
    });

    it('5xx is transient; a network that does not answer is transient without a code', async () => {
      fake.failNext(1, 503);
      const failed = await rejection(create(campaign()));
      expect([failed.kind, failed.httpStatus]).toEqual(['transient', 503]);

      const down = new SnapchatAds(
        { ...fake.settings(), apiUrl: await refusingLoopbackUrl() },
        new NetworkHttp('snapchat_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const unreachable = await rejection(
        down.createCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId: 'dsp_2', campaign: campaign() }),
      );
      expect([unreachable.kind, unreachable.providerCode]).toEqual(['transient', null]);
    });
  });

  describe("the dispatch's marker, and finding a campaign again", () => {
    it("names the campaign with the marker, after the partner's name", async () => {
      await create(campaign({ name: 'Summer drop' }), USD_ACCOUNT, usd, 'dsp_01JMARKER');
      expect(sentCampaign().name).toBe('Summer drop · dsp_01JMARKER');
    });

    it('finds nothing when no campaign carries the marker, asking Snap for its largest pages', async () => {
      expect(await find('dsp_nothing')).toEqual([]);
      const sent = fake.lastRequest(/\/campaigns$/);
      expect([sent.method, sent.path, sent.headers.authorization, sent.query]).toEqual([
        'GET',
        `/v1/adaccounts/${USD_ACCOUNT}/campaigns`,
        `Bearer ${token}`,
        { limit: '1000' },
      ]);
    });

    it('finds the one campaign a create made, by the id the create answered', async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_found_one');
      const found = await find('dsp_found_one');
      expect(found).toEqual([{ providerResourceId: created.providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) }]);
    });

    it('finds two, oldest first, when Snap made the campaign twice (and answered 503)', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      const failed = await rejection(create(campaign(), USD_ACCOUNT, usd, 'dsp_twice'));
      expect(failed.kind).toBe('transient');
      const [older, newer] = fake.campaignsFor('dsp_twice');
      expect((await find('dsp_twice')).map((c) => c.providerResourceId)).toEqual([older.id, newer.id]);
    });

    it('ignores a campaign whose name only carries a longer id, and campaigns of other ad accounts', async () => {
      await create(campaign(), USD_ACCOUNT, usd, 'dsp_short0');
      await create(
        campaign({ budget: { amount_micros: 30_000_000, currency: 'EUR', type: 'daily' } }),
        EUR_ACCOUNT,
        { currency: 'EUR', timezone: 'Europe/Paris' },
        'dsp_short',
      );
      expect(await find('dsp_short')).toEqual([]);
    });

    it("follows Snap's pages (newest first) to an older campaign, sending the cursor to our own API URL", async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_paged');
      fake.plantCampaigns(
        USD_ACCOUNT,
        Array.from({ length: 1_000 }, (_, i) => `Someone else's campaign ${i}`),
      );
      const before = fake.requests.length;
      expect((await find('dsp_paged')).map((c) => c.providerResourceId)).toEqual([created.providerResourceId]);
      const pages = fake.requests.slice(before);
      expect(pages).toHaveLength(2);
      expect(pages[1].query).toEqual({ limit: '1000', cursor: expect.any(String) });
      expect(pages[1].headers.authorization).toBe(`Bearer ${token}`);
    });

    it('a lookup answered 5xx is transient; 401 auth', async () => {
      fake.failNext(1, 503);
      const failed = await rejection(find('dsp_1'));
      expect([failed.kind, failed.httpStatus]).toEqual(['transient', 503]);
      fake.expireToken(token);
      expect((await rejection(find('dsp_1'))).kind).toBe('auth');
    });
  });

  describe('the dry run (Snap has no validate-only call: the rules of a create, no call)', () => {
    it('answers checked by rules, without a request to Snap', async () => {
      const before = [fake.requests.length, fake.created.length];
      expect(await validate(campaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect([fake.requests.length, fake.created.length]).toEqual(before);
    });

    it('a campaign a create would refuse before calling is validation, still without a request', async () => {
      const before = fake.requests.length;
      const refused = await rejection(validate(campaign({ budget: { amount_micros: 300_000_000, currency: 'USD', type: 'lifetime' } })));
      expect([refused.kind, refused.providerCode]).toEqual(['validation', 'lifetime_budget_needs_end']);
      expect((await rejection(validate(campaign({ objective: 'reach' })))).providerCode).toBe('objective_unsupported');
      expect(fake.requests.length).toBe(before);
    });
  });
});
