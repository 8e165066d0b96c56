import { request } from 'undici';
import { CampaignSpec } from '@campaign-ops/channels';
import { PinterestAdsFake, closeFakeNetworkDispatcher, fakeNetworkDispatcher, refusingLoopbackUrl, rejection } from '../../../../test/support/fake-networks';
import { NetworkHttp } from '../network-http';
import { PinterestAds } from './pinterest-ads';

const USD_ACCOUNT = '549755885175';
const JPY_ACCOUNT = '549755885176';
const usd = { currency: 'USD', timezone: 'UTC' };
const jpy = { currency: 'JPY', timezone: 'UTC' };

const campaign = (overrides: Partial<CampaignSpec> = {}): CampaignSpec => ({
  name: 'Autumn boards',
  objective: 'conversion',
  budget: { amount_micros: 25_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2027-03-01T08:00:00Z', timezone: 'Europe/London' },
  ...overrides,
});

describe('PinterestAds against its fake', () => {
  let fake: PinterestAdsFake;
  let pinterest: PinterestAds;
  let token: string;

  beforeAll(async () => {
    fake = await PinterestAdsFake.start({
      accounts: [
        { id: USD_ACCOUNT, currency: 'USD', timezone: 'UTC' },
        { id: JPY_ACCOUNT, currency: 'JPY', timezone: 'UTC' },
      ],
    });
    pinterest = new PinterestAds(fake.settings(), new NetworkHttp('pinterest_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (spec: CampaignSpec, accountId = USD_ACCOUNT, account = usd, dispatchId = 'dsp_1') =>
    pinterest.createCampaign({ accessToken: token, providerAccountId: accountId, account }, { dispatchId, campaign: spec });
  const find = (dispatchId: string, accountId = USD_ACCOUNT) =>
    pinterest.findCampaigns({ accessToken: token, providerAccountId: accountId, account: usd }, { dispatchId, campaign: campaign() });
  const validate = (spec: CampaignSpec, dispatchId = 'dsp_dry') =>
    pinterest.validateCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId, campaign: spec });
  const sentCampaign = () => (fake.lastRequest(/\/campaigns$/).body as Array<Record<string, unknown>>)[0];

  describe('OAuth', () => {
    it('sends the browser to the consent page with comma-separated ads scopes', () => {
      const url = new URL(pinterest.authorizationUrl({ state: 'st_1', redirectUri: 'https://ops.example/cb', providerAccountId: USD_ACCOUNT }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/oauth/`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        client_id: fake.clientId,
        redirect_uri: 'https://ops.example/cb',
        response_type: 'code',
        scope: 'ads:read,ads:write',
        state: 'st_1',
      });
    });

    it('exchanges the code with the client as HTTP Basic, then refreshes into a new refresh token', async () => {
      const redirectUri = 'https://ops.example/cb';
      const consent = await request(pinterest.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD_ACCOUNT }), {
        dispatcher: await fakeNetworkDispatcher(),
      });
      await consent.body.dump();
      const code = new URL(String(consent.headers.location)).searchParams.get('code')!;

      const tokens = await pinterest.exchangeCode({ code, redirectUri });
      const grant = fake.lastRequest('/v5/oauth/token');
      expect(grant.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString('base64')}`);
      expect(grant.body).toEqual({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, continuous_refresh: 'true' });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(Date.parse(tokens.expiresAt!) - Date.now()).toBeGreaterThan(29 * 86_400_000);

      const refreshed = await pinterest.refresh(tokens.refreshToken!);
      expect(fake.lastRequest('/v5/oauth/token').body).toEqual({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
      expect(refreshed.refreshToken).toMatch(/^rt-/);
      expect(refreshed.refreshToken).not.toBe(tokens.refreshToken);
    });

    it("a refused code or refresh is auth, with Pinterest's code and message", async () => {
      const code = await rejection(pinterest.exchangeCode({ code: 'never-issued', redirectUri: 'https://ops.example/cb' }));
      expect([code.kind, code.providerCode, code.httpStatus]).toEqual(['auth', '283', 400]);
      expect(code.message).toContain('The authorization grant is invalid');
      const refresh = fake.issueRefreshToken();
      fake.refuseRefresh();
      try {
        const refused = await rejection(pinterest.refresh(refresh));
        expect([refused.kind, refused.providerCode]).toEqual(['auth', '283']);
        expect(refused.message).not.toContain(refresh);
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new PinterestAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('pinterest_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_PINTEREST_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
    });
  });

  describe('reading the ad account', () => {
    it('answers the currency; the v5 ad account names no time zone, so UTC', async () => {
      expect(await pinterest.readAccount({ accessToken: token, providerAccountId: JPY_ACCOUNT })).toEqual(jpy);
      const sent = fake.lastRequest();
      expect([sent.method, sent.path, sent.headers.authorization]).toEqual(['GET', `/v5/ad_accounts/${JPY_ACCOUNT}`, `Bearer ${token}`]);
    });

    it('401 is auth; 403 and 404 are account_unreachable', async () => {
      fake.expireToken(token);
      const expired = await rejection(pinterest.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([expired.kind, expired.providerCode, expired.httpStatus]).toEqual(['auth', '2', 401]);
      expect(expired.message).not.toContain(token);
      const valid = fake.issueAccessToken();
      fake.denyAccount(JPY_ACCOUNT, valid);
      const denied = await rejection(pinterest.readAccount({ accessToken: valid, providerAccountId: JPY_ACCOUNT }));
      expect([denied.kind, denied.httpStatus]).toEqual(['account_unreachable', 403]);
      const missing = await rejection(pinterest.readAccount({ accessToken: valid, providerAccountId: '1' }));
      expect([missing.kind, missing.message]).toEqual(['account_unreachable', 'pinterest_ads: the token cannot reach this ad account: AdAccount not found.']);
    });
  });

  describe('creating a campaign', () => {
    it("maps the unified campaign field by field (an array body, Unix seconds, PAUSED) and answers Pinterest's id", async () => {
      const created = await create(campaign({ schedule: { start_at: '2027-03-01T08:00:00Z', timezone: 'Europe/London', end_at: '2027-03-31T08:00:00.500Z' } }));
      const sent = fake.lastRequest(/\/campaigns$/);
      expect([sent.method, sent.path, sent.headers.authorization]).toEqual(['POST', `/v5/ad_accounts/${USD_ACCOUNT}/campaigns`, `Bearer ${token}`]);
      expect(sent.body).toEqual([
        {
          ad_account_id: USD_ACCOUNT,
          name: 'Autumn boards · dsp_1',
          status: 'PAUSED',
          objective_type: 'WEB_CONVERSION',
          daily_spend_cap: 25_000_000,
          start_time: 1_803_888_000,
          end_time: 1_806_480_000,
        },
      ]);
      expect(created.providerResourceId).toBe(fake.created[fake.created.length - 1].id);
      expect(created.providerResourceId).toMatch(/^\d+$/);
    });

    it.each([
      ['conversion', 'WEB_CONVERSION'],
      ['traffic', 'CONSIDERATION'],
      ['awareness', 'AWARENESS'],
      ['engagement', 'CONSIDERATION'],
      ['leads', 'LEADS'],
    ])('objective %s is objective_type %s', async (objective, type) => {
      await create(campaign({ objective }));
      expect(sentCampaign().objective_type).toBe(type);
    });

    it('app_installs has no Pinterest objective: refused before any call', async () => {
      const before = fake.requests.length;
      const refused = await rejection(create(campaign({ objective: 'app_installs' })));
      expect([refused.kind, refused.providerCode]).toEqual(['validation', 'objective_unsupported']);
      expect(fake.requests.length).toBe(before);
    });

    it('a lifetime budget is lifetime_spend_cap (never both caps)', async () => {
      await create(
        campaign({
          budget: { amount_micros: 400_000_000, currency: 'USD', type: 'lifetime' },
          schedule: { start_at: '2027-03-01T08:00:00Z', timezone: 'UTC', end_at: '2027-04-01T08:00:00Z' },
        }),
      );
      expect(sentCampaign()).toMatchObject({ lifetime_spend_cap: 400_000_000, end_time: 1_806_566_400 });
      expect(sentCampaign()).not.toHaveProperty('daily_spend_cap');
    });

    it.each([
      ['USD', USD_ACCOUNT, usd, 12_345_678],
      ['JPY', JPY_ACCOUNT, jpy, 3_000_000_000],
    ])('passes %s micros through unchanged', async (currency, accountId, account, micros) => {
      await create(campaign({ budget: { amount_micros: micros, currency, type: 'daily' } }), accountId, account);
      expect(sentCampaign().daily_spend_cap).toBe(micros);
    });

    it("an item exception is validation with Pinterest's message and code", async () => {
      const refused = await rejection(create(campaign({ budget: { amount_micros: 4_990_000, currency: 'USD', type: 'daily' } })));
      expect([refused.kind, refused.providerCode, refused.message]).toEqual(['validation', '2648', 'Daily spend cap must be at least $5.00']);
    });

    it('401 is auth, 403 account_unreachable', async () => {
      fake.expireToken(token);
      expect((await rejection(create(campaign()))).kind).toBe('auth');
      token = fake.issueAccessToken();
      fake.denyAccount(USD_ACCOUNT, token);
      expect((await rejection(create(campaign()))).kind).toBe('account_unreachable');
    });

    it('429 is rate_limited after X-RateLimit-Reset; 5xx transient; no answer transient without a code', async () => {
      fake.rateLimitNext(1, 30);
      const limited = await rejection(create(campaign()));
      expect([limited.kind, limited.providerCode, limited.retryAfterMs]).toEqual(['rate_limited', '8', 30_000]);
      fake.rateLimitNext(1, 0);
      expect((await rejection(create(campaign()))).retryAfterMs).toBeNull();
      fake.failNext(1, 500);
      const failed = await rejection(create(campaign()));
      expect([failed.kind, failed.httpStatus]).toEqual(['transient', 500]);

      const down = new PinterestAds(
        { ...fake.settings(), apiUrl: await refusingLoopbackUrl() },
        new NetworkHttp('pinterest_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const unreachable = await rejection(down.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([unreachable.kind, unreachable.providerCode]).toEqual(['transient', null]);
    });
  });

  describe("the dispatch's marker, and finding a campaign again", () => {
    it("names the campaign with the marker, after the partner's name", async () => {
      await create(campaign({ name: 'Cosy corners' }), USD_ACCOUNT, usd, 'dsp_01JMARKER');
      expect(sentCampaign().name).toBe('Cosy corners · dsp_01JMARKER');
    });

    it('finds nothing when no campaign carries the marker, asking for the largest pages, newest first', async () => {
      expect(await find('dsp_nothing')).toEqual([]);
      const sent = fake.lastRequest(/\/campaigns$/);
      expect([sent.method, sent.path, sent.headers.authorization, sent.query]).toEqual([
        'GET',
        `/v5/ad_accounts/${USD_ACCOUNT}/campaigns`,
        `Bearer ${token}`,
        { page_size: '250', order: 'DESCENDING' },
      ]);
    });

    it('finds the one campaign a create made, by the id the create answered', async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_found_one');
      expect(await find('dsp_found_one')).toEqual([
        { providerResourceId: created.providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) },
      ]);
    });

    it('finds two, oldest first, when Pinterest made the campaign twice (and answered 503)', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      expect((await rejection(create(campaign(), USD_ACCOUNT, usd, 'dsp_twice'))).kind).toBe('transient');
      const [older, newer] = fake.campaignsFor('dsp_twice');
      expect((await find('dsp_twice')).map((c) => c.providerResourceId)).toEqual([older.id, newer.id]);
    });

    it('ignores a campaign whose name only carries a longer id, and campaigns of other ad accounts', async () => {
      await create(campaign(), USD_ACCOUNT, usd, 'dsp_short0');
      await create(campaign({ budget: { amount_micros: 3_000_000_000, currency: 'JPY', type: 'daily' } }), JPY_ACCOUNT, jpy, 'dsp_short');
      expect(await find('dsp_short')).toEqual([]);
    });

    it('follows the bookmark to an older campaign', async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_paged');
      fake.plantCampaigns(
        USD_ACCOUNT,
        Array.from({ length: 300 }, (_, i) => `Someone else's campaign ${i}`),
      );
      const before = fake.requests.length;
      expect((await find('dsp_paged')).map((c) => c.providerResourceId)).toEqual([created.providerResourceId]);
      const pages = fake.requests.slice(before);
      expect(pages.map((r) => r.query.bookmark === undefined)).toEqual([true, false]);
    });

    it('a lookup answered 5xx is transient; 401 auth', async () => {
      fake.failNext(1, 503);
      const failed = await rejection(find('dsp_1'));
      expect([failed.kind, failed.httpStatus]).toEqual(['transient', 503]);
      fake.expireToken(token);
      expect((await rejection(find('dsp_1'))).kind).toBe('auth');
    });
  });

  describe('the dry run (Pinterest has no validate-only call: the rules of a create, no call)', () => {
    it('answers checked by rules, without a request to Pinterest', async () => {
      const before = [fake.requests.length, fake.created.length];
      expect(await validate(campaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect([fake.requests.length, fake.created.length]).toEqual(before);
    });

    it('a campaign a create would refuse before calling is validation, still without a request', async () => {
      const before = fake.requests.length;
      expect(await rejection(validate(campaign({ objective: 'app_installs' })))).toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      expect(await rejection(validate(campaign({ budget: { amount_micros: 400_000_000, currency: 'USD', type: 'lifetime' } })))).toMatchObject({
        kind: 'validation',
        providerCode: 'lifetime_budget_needs_end',
      });
      expect(fake.requests.length).toBe(before);
    });
  });
});
