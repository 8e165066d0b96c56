import { CampaignSpec } from '@campaign-ops/channels';
import {
  XAdsFake,
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  rejection,
} from '../../../../test/support/fake-networks';
import { NetworkHttp } from '../network-http';
import { XAds, oauth1Header, oauth1Signature, xAdsCallbackCode } from './x-ads';

const USD_ACCOUNT = '18ce54d4x5t';
const JPY_ACCOUNT = '18ce54d4x5u';
const KWD_ACCOUNT = '18ce54d4x5v';
const usd = { currency: 'USD', timezone: 'America/Los_Angeles' };
const jpy = { currency: 'JPY', timezone: 'Asia/Tokyo' };
const kwd = { currency: 'KWD', timezone: 'Asia/Kuwait' };
const CALLBACK = 'https://ops.example/v1/connections/oauth/callback';

const campaign = (overrides: Partial<CampaignSpec> = {}): CampaignSpec => ({
  name: 'Holiday promo',
  objective: 'conversion',
  budget: { amount_micros: 60_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2027-01-04T17:00:00Z', timezone: 'America/New_York' },
  ...overrides,
});

describe('OAuth 1.0a signing (RFC 5849, HMAC-SHA1)', () => {
  // X's own worked example ("Creating a signature").
  const example = {
    method: 'POST',
    url: 'https://api.twitter.com/1.1/statuses/update.json?include_entities=true',
    params: { status: 'Hello Ladies + Gentlemen, a signed OAuth request!' },
    consumerKey: 'xvz1evFS4wEEPTGEFPHBog',
    consumerSecret: 'kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw',
    token: '370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb',
    tokenSecret: 'LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE',
    nonce: 'kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg',
    timestamp: 1318622958,
  };

  it("signs X's documented example to its documented signature", () => {
    const oauth = {
      oauth_consumer_key: example.consumerKey,
      oauth_nonce: example.nonce,
      oauth_signature_method: 'HMAC-SHA1',
      oauth_timestamp: String(example.timestamp),
      oauth_token: example.token,
      oauth_version: '1.0',
    };
    expect(oauth1Signature(example, oauth)).toBe('hCtSmYh+iHYCEqBWrE7C7hYmtUk=');
  });

  it('writes the header with every oauth_* parameter percent-encoded', () => {
    expect(oauth1Header(example)).toBe(
      'OAuth oauth_consumer_key="xvz1evFS4wEEPTGEFPHBog", oauth_nonce="kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", oauth_signature="hCtSmYh%2BiHYCEqBWrE7C7hYmtUk%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1318622958", oauth_token="370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb", oauth_version="1.0"',
    );
  });
});

describe('XAds against its fake', () => {
  let fake: XAdsFake;
  let x: XAds;
  let token: string;

  beforeAll(async () => {
    fake = await XAdsFake.start({
      accounts: [
        { id: USD_ACCOUNT, ...usd },
        { id: JPY_ACCOUNT, ...jpy },
        { id: KWD_ACCOUNT, ...kwd },
      ],
    });
    x = new XAds(fake.settings(), new NetworkHttp('x_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (spec: CampaignSpec, accountId = USD_ACCOUNT, account = usd, dispatchId = 'dsp_1') =>
    x.createCampaign({ accessToken: token, providerAccountId: accountId, account }, { dispatchId, campaign: spec });
  const find = (dispatchId: string, spec = campaign(), accountId = USD_ACCOUNT) =>
    x.findCampaigns({ accessToken: token, providerAccountId: accountId, account: usd }, { dispatchId, campaign: spec });
  const validate = (spec: CampaignSpec, dispatchId = 'dsp_dry') =>
    x.validateCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId, campaign: spec });
  const lineItemsOf = (campaignId: string) =>
    fake.created.filter((c) => c.kind === 'line_item' && (c.body as Record<string, string>).campaign_id === campaignId);
  const lastOf = (kind: string) => [...fake.created].reverse().find((c) => c.kind === kind)!.body as Record<string, string>;

  describe('OAuth 1.0a consent and tokens', () => {
    it('consent: a signed request token with our callback and state, X\'s authorize page, the verifier exchanged for "<token>:<secret>"', async () => {
      const url = new URL(await x.startConsent({ state: 'st_1', redirectUri: CALLBACK, providerAccountId: USD_ACCOUNT }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/oauth/authorize`);
      expect(url.searchParams.get('oauth_token')).toMatch(/^rq-/);
      const requestTokenCall = fake.lastRequest('/oauth/request_token');
      expect(requestTokenCall.method).toBe('POST');
      expect(requestTokenCall.headers.authorization).toContain(`oauth_callback="${encodeURIComponent(`${CALLBACK}?state=st_1`)}"`);
      expect(requestTokenCall.headers.authorization).toContain(`oauth_consumer_key="${fake.clientId}"`);

      const back = await followConsent(url.toString());
      expect(back.location.origin + back.location.pathname).toBe(CALLBACK);
      expect(back.query.state).toBe('st_1');
      const code = xAdsCallbackCode(back.query);
      expect(code).toBe(`${back.query.oauth_token}:${back.query.oauth_verifier}`);
      expect(x.callbackCode(back.query)).toBe(code);
      // The request token is bound to its round: the round keeps it, and another round's is refused.
      const binding = x.consentBinding(url.toString());
      expect(binding).toBe(back.query.oauth_token);
      expect(x.callbackCode(back.query, binding)).toBe(code);
      expect(() => x.callbackCode(back.query, 'rq-of-another-round')).toThrow(
        expect.objectContaining({ kind: 'auth', providerCode: 'request_token_mismatch' }),
      );

      const tokens = await x.exchangeCode({ code: code!, redirectUri: CALLBACK });
      expect(tokens.accessToken).toMatch(/^at-[0-9a-f]+:[0-9a-f]+$/);
      expect([tokens.refreshToken, tokens.expiresAt]).toEqual([null, null]);
      const exchange = fake.lastRequest('/oauth/access_token');
      expect([exchange.method, exchange.query]).toEqual(['POST', { oauth_token: back.query.oauth_token, oauth_verifier: back.query.oauth_verifier }]);
      expect(await x.readAccount({ accessToken: tokens.accessToken, providerAccountId: USD_ACCOUNT })).toEqual(usd);

      const again = await rejection(x.exchangeCode({ code: code!, redirectUri: CALLBACK }));
      expect([again.kind, again.httpStatus]).toEqual(['auth', 401]);
    });

    it('a refused consent comes back with `denied`: no code', async () => {
      fake.denyNextConsent();
      const back = await followConsent(await x.startConsent({ state: 'st_2', redirectUri: CALLBACK, providerAccountId: USD_ACCOUNT }));
      expect(back.query.denied).toMatch(/^rq-/);
      expect(xAdsCallbackCode(back.query)).toBeNull();
    });

    it('no plain consent URL, no refresh: both say why', async () => {
      expect(() => x.authorizationUrl()).toThrow(expect.objectContaining({ kind: 'validation', providerCode: 'oauth1_consent_is_async' }));
      const refresh = await rejection(x.refresh());
      expect([refresh.kind, refresh.providerCode]).toEqual(['auth', 'refresh_unsupported']);
      expect((await rejection(x.exchangeCode({ code: 'no-verifier', redirectUri: CALLBACK }))).kind).toBe('auth');
    });

    it("needs the app's consumer key and secret even for imported tokens", async () => {
      expect(x.launchUnavailableReason()).toBeNull();
      const bare = new XAds(
        fake.settings({ clientId: null, clientSecret: null }),
        new NetworkHttp('x_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      expect(bare.launchUnavailableReason()).toContain('CHANNEL_X_ADS_CLIENT_ID');
      const refused = await rejection(bare.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([refused.kind, refused.providerCode]).toEqual(['validation', 'channel_not_configured']);
    });
  });

  describe("this service's OAuth client refused", () => {
    it("makes a request-token call X cannot authenticate (a wrong consumer secret) validation invalid_client: only the app signs it, so it is the operator's configuration", async () => {
      const misconfigured = new XAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('x_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.startConsent({ state: 'st_9', redirectUri: CALLBACK, providerAccountId: USD_ACCOUNT }));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_X_ADS_CLIENT_ID');
    });
  });

  describe('reading the ad account', () => {
    it("answers the account's time zone and its funding instrument's currency, every call signed with the user token", async () => {
      expect(await x.readAccount({ accessToken: token, providerAccountId: JPY_ACCOUNT })).toEqual(jpy);
      const [account, instruments] = fake.requests.slice(-2);
      expect([account.method, account.path, instruments.path]).toEqual([
        'GET',
        `/12/accounts/${JPY_ACCOUNT}`,
        `/12/accounts/${JPY_ACCOUNT}/funding_instruments`,
      ]);
      expect(account.headers.authorization).toMatch(/^OAuth /);
      expect(account.headers.authorization).toContain(`oauth_token="${token.split(':')[0]}"`);
      expect(account.headers.authorization).not.toContain(token.split(':')[1]);
    });

    it('a signature the network cannot verify is auth (wrong consumer secret)', async () => {
      const forged = new XAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('x_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(forged.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['auth', '32', 401]);
      const wrongSecret = await rejection(x.readAccount({ accessToken: `${token.split(':')[0]}:0000`, providerAccountId: USD_ACCOUNT }));
      expect(wrongSecret.kind).toBe('auth');
      expect((await rejection(x.readAccount({ accessToken: 'no-secret-here', providerAccountId: USD_ACCOUNT }))).providerCode).toBe('access_token_malformed');
    });

    it('an expired token is auth; an account the token cannot reach is account_unreachable', async () => {
      fake.expireToken(token);
      const expired = await rejection(x.readAccount({ accessToken: token, providerAccountId: USD_ACCOUNT }));
      expect([expired.kind, expired.providerCode]).toEqual(['auth', '89']);
      expect(expired.message).not.toContain(token.split(':')[1]);
      const valid = fake.issueAccessToken();
      fake.denyAccount(JPY_ACCOUNT, valid);
      const denied = await rejection(x.readAccount({ accessToken: valid, providerAccountId: JPY_ACCOUNT }));
      expect([denied.kind, denied.providerCode, denied.httpStatus]).toEqual(['account_unreachable', 'ACCOUNT_NOT_FOUND', 403]);
      const unknown = await rejection(x.readAccount({ accessToken: valid, providerAccountId: 'nope1' }));
      expect([unknown.kind, unknown.httpStatus]).toEqual(['account_unreachable', 404]);
    });
  });

  describe('creating a campaign', () => {
    it("creates the campaign (budget, funding instrument, PAUSED) then its line item (objective, schedule in the account's zone)", async () => {
      const created = await create(campaign({ schedule: { start_at: '2027-01-04T17:00:00Z', timezone: 'America/New_York', end_at: '2027-02-01T08:00:00Z' } }));
      const calls = fake.requests.slice(-3);
      expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([
        `GET /12/accounts/${USD_ACCOUNT}/funding_instruments`,
        `POST /12/accounts/${USD_ACCOUNT}/campaigns`,
        `POST /12/accounts/${USD_ACCOUNT}/line_items`,
      ]);
      expect(calls.every((c) => c.headers.authorization.startsWith('OAuth '))).toBe(true);
      expect(calls[1].query).toEqual({
        name: 'Holiday promo · dsp_1',
        funding_instrument_id: `fi${USD_ACCOUNT.slice(0, 4)}`,
        entity_status: 'PAUSED',
        budget_optimization: 'CAMPAIGN',
        daily_budget_amount_local_micro: '60000000',
      });
      expect(calls[2].query).toEqual({
        campaign_id: created.providerResourceId,
        name: 'Holiday promo',
        objective: 'WEBSITE_CONVERSIONS',
        product_type: 'PROMOTED_TWEETS',
        placements: 'ALL_ON_TWITTER',
        bid_strategy: 'AUTO',
        entity_status: 'PAUSED',
        start_time: '2027-01-04T09:00:00-08:00',
        end_time: '2027-02-01T00:00:00-08:00',
      });
      expect(created.providerResourceId).toBe(fake.created.find((c) => c.kind === 'campaign' && c.id === created.providerResourceId)!.id);
    });

    it.each([
      ['conversion', 'WEBSITE_CONVERSIONS'],
      ['traffic', 'WEBSITE_CLICKS'],
      ['awareness', 'REACH'],
      ['engagement', 'ENGAGEMENTS'],
      ['leads', 'LEAD_GENERATION'],
    ])('objective %s is the line item objective %s', async (objective, xObjective) => {
      await create(campaign({ objective }));
      expect(lastOf('line_item').objective).toBe(xObjective);
    });

    it("app_installs: X refuses the line item without an app (validation, X's message and code) and the campaign is deleted again", async () => {
      const refused = await rejection(create(campaign({ objective: 'app_installs' })));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'MISSING_PARAMETER', 400]);
      expect(refused.message).toBe('An app store identifier is required for the APP_INSTALLS objective (android_app_store_identifier)');
      const [lineItem, deletion] = fake.requests.slice(-2);
      expect(lineItem.query.objective).toBe('APP_INSTALLS');
      expect(deletion.method).toBe('DELETE');
      expect(deletion.path).toBe(`/12/accounts/${USD_ACCOUNT}/campaigns/${fake.created[fake.created.length - 1].id}`);
      expect(fake.created[fake.created.length - 1].kind).toBe('campaign_deleted');
    });

    it('a lifetime budget is the total budget, with the daily cap at the same amount (CAMPAIGN optimization needs one)', async () => {
      await create(
        campaign({
          budget: { amount_micros: 500_000_000, currency: 'USD', type: 'lifetime' },
          schedule: { start_at: '2027-07-01T07:00:00Z', timezone: 'UTC', end_at: '2027-07-31T07:00:00Z' },
        }),
      );
      expect(lastOf('campaign')).toMatchObject({ total_budget_amount_local_micro: '500000000', daily_budget_amount_local_micro: '500000000' });
      expect(lastOf('line_item')).toMatchObject({ start_time: '2027-07-01T00:00:00-07:00', end_time: '2027-07-31T00:00:00-07:00' });
    });

    it.each([
      ['USD', USD_ACCOUNT, usd, 12_345_678, '2027-01-04T09:00:00-08:00'],
      ['JPY', JPY_ACCOUNT, jpy, 5_000_000_000, '2027-01-05T02:00:00+09:00'],
      ['KWD', KWD_ACCOUNT, kwd, 2_500_000, '2027-01-04T20:00:00+03:00'],
    ])("passes %s micros through as local micros, the schedule in the account's zone", async (currency, accountId, account, micros, start) => {
      await create(campaign({ budget: { amount_micros: micros, currency, type: 'daily' } }), accountId, account);
      expect(lastOf('campaign').daily_budget_amount_local_micro).toBe(String(micros));
      expect(lastOf('line_item').start_time).toBe(start);
    });

    it("no funding instrument in the budget's currency is refused before the campaign call", async () => {
      const refused = await rejection(create(campaign({ budget: { amount_micros: 60_000_000, currency: 'EUR', type: 'daily' } })));
      expect([refused.kind, refused.providerCode]).toEqual(['validation', 'FUNDING_INSTRUMENT_NOT_FOUND']);
      expect(fake.lastRequest().path).toBe(`/12/accounts/${USD_ACCOUNT}/funding_instruments`);
    });

    it("429 waits until X's rate-limit reset; code 88 under any status is a rate limit too", async () => {
      fake.rateLimitNext(1, 40);
      const limited = await rejection(create(campaign()));
      expect([limited.kind, limited.providerCode, limited.httpStatus]).toEqual(['rate_limited', 'TOO_MANY_REQUESTS', 429]);
      expect(limited.retryAfterMs).toBeGreaterThan(38_000);
      expect(limited.retryAfterMs).toBeLessThanOrEqual(40_000);
      fake.answerNext({ status: 420, json: { errors: [{ code: 88, message: 'Rate limit exceeded' }] } });
      const classic = await rejection(create(campaign()));
      expect([classic.kind, classic.providerCode]).toEqual(['rate_limited', '88']);
    });

    it('401 is auth, 403 account_unreachable, 5xx transient, no answer transient without a code', async () => {
      fake.expireToken(token);
      expect((await rejection(create(campaign()))).kind).toBe('auth');
      token = fake.issueAccessToken();
      fake.denyAccount(USD_ACCOUNT, token);
      expect((await rejection(create(campaign()))).kind).toBe('account_unreachable');
      token = fake.issueAccessToken();
      fake.failNext(1, 503);
      const failed = await rejection(create(campaign()));
      expect([failed.kind, failed.providerCode, failed.httpStatus]).toEqual(['transient', 'SERVICE_UNAVAILABLE', 503]);

      const down = new XAds(
        { ...fake.settings(), apiUrl: await refusingLoopbackUrl() },
        new NetworkHttp('x_ads', 2_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const unreachable = await rejection(
        down.createCampaign({ accessToken: token, providerAccountId: USD_ACCOUNT, account: usd }, { dispatchId: 'dsp_2', campaign: campaign() }),
      );
      expect([unreachable.kind, unreachable.providerCode]).toEqual(['transient', null]);
    });
  });

  describe("the dispatch's marker, and finding a campaign again", () => {
    it("names the campaign with the marker, after the partner's name; the line item keeps the partner's name", async () => {
      await create(campaign({ name: 'New year' }), USD_ACCOUNT, usd, 'dsp_01JMARKER');
      expect(lastOf('campaign').name).toBe('New year · dsp_01JMARKER');
      expect(lastOf('line_item').name).toBe('New year');
    });

    it('finds nothing when no campaign carries the marker: every campaign, newest first, in pages of 1000, signed', async () => {
      const before = fake.requests.length;
      expect(await find('dsp_nothing')).toEqual([]);
      const sent = fake.requests.slice(before);
      expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /12/accounts/${USD_ACCOUNT}/campaigns`]);
      expect(sent[0].query).toEqual({ count: '1000', sort_by: 'created_at-desc' });
      expect(sent[0].headers.authorization).toContain(`oauth_token="${token.split(':')[0]}"`);
    });

    it('finds the one campaign a create made; its line item is there, so nothing is made', async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_found_one');
      const before = fake.created.length;
      expect(await find('dsp_found_one')).toEqual([
        { providerResourceId: created.providerResourceId, createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) },
      ]);
      expect(fake.lastRequest().path).toBe(`/12/accounts/${USD_ACCOUNT}/line_items`);
      expect(fake.lastRequest().query).toEqual({ campaign_ids: created.providerResourceId });
      expect(fake.created.length).toBe(before);
    });

    it("completes a found campaign whose line item is missing (the campaign create's answer was lost) with the line item the create would have made", async () => {
      fake.afterNextCreate('campaign', { kind: 'fail', status: 503 });
      expect((await rejection(create(campaign(), USD_ACCOUNT, usd, 'dsp_no_line_item'))).kind).toBe('transient');
      const [made] = fake.campaignsFor('dsp_no_line_item');
      expect(lineItemsOf(made.id)).toEqual([]);
      expect((await find('dsp_no_line_item')).map((c) => c.providerResourceId)).toEqual([made.id]);
      expect(lineItemsOf(made.id).map((c) => c.body)).toEqual([
        {
          campaign_id: made.id,
          name: 'Holiday promo',
          objective: 'WEBSITE_CONVERSIONS',
          product_type: 'PROMOTED_TWEETS',
          placements: 'ALL_ON_TWITTER',
          bid_strategy: 'AUTO',
          entity_status: 'PAUSED',
          start_time: '2027-01-04T09:00:00-08:00',
        },
      ]);
      // Complete now: a second lookup makes nothing more.
      await find('dsp_no_line_item');
      expect(lineItemsOf(made.id)).toHaveLength(1);
    });

    it('a line item create that fails transiently keeps the campaign (the line item may exist): the lookup then finds it complete', async () => {
      fake.afterNextCreate('line_item', { kind: 'fail', status: 503 });
      const before = fake.requests.length;
      expect((await rejection(create(campaign(), USD_ACCOUNT, usd, 'dsp_line_item_lost'))).kind).toBe('transient');
      expect(fake.requests.slice(before).some((r) => r.method === 'DELETE')).toBe(false);
      const [made] = fake.campaignsFor('dsp_line_item_lost');
      expect((await find('dsp_line_item_lost')).map((c) => c.providerResourceId)).toEqual([made.id]);
      expect(lineItemsOf(made.id)).toHaveLength(1);
    });

    it('a completion X refuses is handled as in a create: the campaign deleted, the refusal thrown; then nothing is found', async () => {
      const spec = campaign({ objective: 'app_installs' });
      fake.afterNextCreate('campaign', { kind: 'fail', status: 503 });
      await rejection(create(spec, USD_ACCOUNT, usd, 'dsp_refused_completion'));
      const [made] = fake.campaignsFor('dsp_refused_completion');
      const refused = await rejection(find('dsp_refused_completion', spec));
      expect([refused.kind, refused.providerCode]).toEqual(['validation', 'MISSING_PARAMETER']);
      expect(fake.lastRequest().method).toBe('DELETE');
      expect(fake.created.some((c) => c.kind === 'campaign_deleted' && c.id === made.id)).toBe(true);
      expect(await find('dsp_refused_completion', spec)).toEqual([]);
    });

    it('finds two, oldest first, when X made the campaign twice (and answered 503): the oldest, which the dispatch adopts, is completed', async () => {
      fake.afterNextCreate('campaign', { kind: 'twice' });
      expect((await rejection(create(campaign(), USD_ACCOUNT, usd, 'dsp_twice'))).kind).toBe('transient');
      const [older, newer] = fake.campaignsFor('dsp_twice');
      expect((await find('dsp_twice')).map((c) => c.providerResourceId)).toEqual([older.id, newer.id]);
      expect([lineItemsOf(older.id).length, lineItemsOf(newer.id).length]).toEqual([1, 0]);
    });

    it('ignores a campaign whose name only carries a longer id, and campaigns of other ad accounts', async () => {
      await create(campaign(), USD_ACCOUNT, usd, 'dsp_short0');
      await create(campaign({ budget: { amount_micros: 5_000_000_000, currency: 'JPY', type: 'daily' } }), JPY_ACCOUNT, jpy, 'dsp_short');
      expect(await find('dsp_short')).toEqual([]);
    });

    it('follows next_cursor to an older campaign', async () => {
      const created = await create(campaign(), USD_ACCOUNT, usd, 'dsp_paged');
      fake.plantCampaigns(
        USD_ACCOUNT,
        Array.from({ length: 1_000 }, (_, i) => `Someone else's campaign ${i}`),
      );
      const before = fake.requests.length;
      expect((await find('dsp_paged')).map((c) => c.providerResourceId)).toEqual([created.providerResourceId]);
      const pages = fake.requests.slice(before).filter((r) => r.path.endsWith('/campaigns'));
      expect(pages.map((r) => r.query)).toEqual([
        { count: '1000', sort_by: 'created_at-desc' },
        { count: '1000', sort_by: 'created_at-desc', cursor: expect.any(String) },
      ]);
    });

    it('a lookup answered 5xx is transient; 401 auth', async () => {
      fake.failNext(1, 503);
      const failed = await rejection(find('dsp_1'));
      expect([failed.kind, failed.httpStatus]).toEqual(['transient', 503]);
      fake.expireToken(token);
      expect((await rejection(find('dsp_1'))).kind).toBe('auth');
    });
  });

  describe('the dry run (X has no validate-only call: the rules of a create, no call)', () => {
    it('answers checked by rules, without a request to X', async () => {
      const before = [fake.requests.length, fake.created.length];
      expect(await validate(campaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect([fake.requests.length, fake.created.length]).toEqual(before);
    });

    it('a campaign a create would refuse before calling is validation, still without a request', async () => {
      const before = fake.requests.length;
      expect(await rejection(validate(campaign({ budget: { amount_micros: 500_000_000, currency: 'USD', type: 'lifetime' } })))).toMatchObject({
        kind: 'validation',
        providerCode: 'lifetime_budget_needs_end',
      });
      expect(await rejection(validate(campaign({ objective: 'sales' })))).toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      expect(fake.requests.length).toBe(before);
    });
  });
});
