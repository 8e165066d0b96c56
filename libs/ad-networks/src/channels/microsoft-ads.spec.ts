import { CampaignSpec } from '@campaign-ops/channels';
import {
  closeFakeNetworkDispatcher,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  unifiedCampaign,
  rejection,
} from '../../../../test/support/fake-networks';
import { MicrosoftAdsFake } from '../../../../test/support/fake-networks/microsoft-ads.fake';
import { isIanaTimeZone } from '../account-time';
import { NetworkHttp } from '../network-http';
import { MICROSOFT_TIME_ZONES, MicrosoftAds, customerManagementUrl, microsoftError, xmlBlocks, xmlValues } from './microsoft-ads';

const USD = '180000001';
const JPY = '180000002';
const KWD = '180000003';
const accounts: Record<string, { currency: string; timezone: string }> = {
  [USD]: { currency: 'USD', timezone: 'America/New_York' },
  [JPY]: { currency: 'JPY', timezone: 'Asia/Tokyo' },
  [KWD]: { currency: 'KWD', timezone: 'Asia/Riyadh' },
};
const CAMPAIGN_PATH = '/Api/Advertiser/CampaignManagement/v13/CampaignManagementService.svc';
const CUSTOMER_PATH = '/Api/CustomerManagement/v13/CustomerManagementService.svc';

describe('MicrosoftAds against its fake, over HTTPS', () => {
  let fake: MicrosoftAdsFake;
  let microsoft: MicrosoftAds;
  let token: string;

  beforeAll(async () => {
    fake = await MicrosoftAdsFake.start({ accounts: Object.entries(accounts).map(([id, account]) => ({ id, ...account })) });
    microsoft = new MicrosoftAds(fake.settings(), new NetworkHttp('microsoft_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  beforeEach(() => {
    token = fake.issueAccessToken();
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  const create = (campaign: CampaignSpec, accountId = USD) =>
    microsoft.createCampaign({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] }, { dispatchId: 'dsp_b1', campaign });
  const sent = () => fake.created.at(-1)!.body as Record<string, string>;
  const soapHeader = (xml: string, name: string) => xmlValues(xml.slice(0, xml.indexOf('<s:Body>')), name)[0];

  it('can launch only with its developer token (else channel_live_unavailable)', async () => {
    expect(microsoft.launchUnavailableReason()).toBeNull();
    const bare = new MicrosoftAds(
      fake.settings({ developerToken: null }),
      new NetworkHttp('microsoft_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
    );
    expect(bare.launchUnavailableReason()).toContain('CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN');
  });

  describe('OAuth', () => {
    const redirectUri = 'https://ops.example/v1/connections/oauth/callback';

    it('asks for msads.manage and offline_access', () => {
      const url = new URL(microsoft.authorizationUrl({ state: 'st_1', redirectUri, providerAccountId: USD }));
      expect(url.origin + url.pathname).toBe(`${fake.url}/common/oauth2/v2.0/authorize`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        client_id: fake.clientId,
        response_type: 'code',
        redirect_uri: redirectUri,
        response_mode: 'query',
        scope: 'https://ads.microsoft.com/msads.manage offline_access',
        state: 'st_1',
      });
    });

    it('trades the code with the scope on the token call; refreshes the same way', async () => {
      const { query } = await followConsent(microsoft.authorizationUrl({ state: 'st_2', redirectUri, providerAccountId: USD }));
      const tokens = await microsoft.exchangeCode({ code: query.code, redirectUri });
      expect(tokens.refreshToken).toMatch(/^rt-/);
      expect(fake.lastRequest('/common/oauth2/v2.0/token').body).toEqual({
        grant_type: 'authorization_code',
        code: query.code,
        redirect_uri: redirectUri,
        scope: 'https://ads.microsoft.com/msads.manage offline_access',
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });
      const refreshed = await microsoft.refresh(tokens.refreshToken!);
      expect(refreshed.refreshToken).not.toBe(tokens.refreshToken);
      expect(fake.lastRequest('/common/oauth2/v2.0/token').body).toMatchObject({
        grant_type: 'refresh_token',
        refresh_token: tokens.refreshToken,
        scope: 'https://ads.microsoft.com/msads.manage offline_access',
      });
    });

    it('makes a refused refresh auth (invalid_grant, AADSTS in the message)', async () => {
      fake.refuseRefresh();
      try {
        const error = await rejection(microsoft.refresh(fake.issueRefreshToken()));
        expect(error).toMatchObject({ kind: 'auth', providerCode: 'invalid_grant', httpStatus: 400 });
        expect(error.message).toContain('AADSTS70000');
      } finally {
        fake.acceptRefresh();
      }
    });
  });

  describe("this service's OAuth client refused (a wrong client secret)", () => {
    it("is validation invalid_client on the refresh and the code exchange: the operator's configuration, which no consent fixes", async () => {
      const misconfigured = new MicrosoftAds(
        fake.settings({ clientSecret: 'not-the-secret' }),
        new NetworkHttp('microsoft_ads', 5_000, { dispatcher: await fakeNetworkDispatcher() }),
      );
      const refused = await rejection(misconfigured.refresh(fake.issueRefreshToken()));
      expect([refused.kind, refused.providerCode, refused.httpStatus]).toEqual(['validation', 'invalid_client', 401]);
      expect(refused.message).toContain('CHANNEL_MICROSOFT_ADS_CLIENT_ID');
      expect(await rejection(misconfigured.exchangeCode({ code: 'any-code', redirectUri: 'https://ops.example/v1/connections/oauth/callback' }))).toMatchObject(
        { kind: 'validation', providerCode: 'invalid_client' },
      );
    });
  });

  describe('reading the ad account', () => {
    it('calls GetAccount on Customer Management with the token and developer token; maps the time zone enum to IANA', async () => {
      await expect(microsoft.readAccount({ accessToken: token, providerAccountId: USD })).resolves.toEqual({ currency: 'USD', timezone: 'America/New_York' });
      const call = fake.lastRequest();
      expect(call.path).toBe(CUSTOMER_PATH);
      expect(call.headers.soapaction).toBe('GetAccount');
      expect(call.headers['content-type']).toBe('text/xml; charset=utf-8');
      expect(soapHeader(call.rawBody, 'AuthenticationToken')).toBe(token);
      expect(soapHeader(call.rawBody, 'DeveloperToken')).toBe(fake.developerToken);
      expect(call.rawBody).toContain(`<GetAccountRequest xmlns="https://bingads.microsoft.com/Customer/v13"><AccountId>${USD}</AccountId></GetAccountRequest>`);
    });

    it('maps OsakaSapporoTokyo and KuwaitRiyadh', async () => {
      await expect(microsoft.readAccount({ accessToken: token, providerAccountId: JPY })).resolves.toEqual({ currency: 'JPY', timezone: 'Asia/Tokyo' });
      await expect(microsoft.readAccount({ accessToken: token, providerAccountId: KWD })).resolves.toEqual({ currency: 'KWD', timezone: 'Asia/Riyadh' });
    });

    it('maps every one of the 75 TimeZoneType values to a zone Node knows, and back to itself', () => {
      expect(Object.keys(MICROSOFT_TIME_ZONES)).toHaveLength(75);
      for (const iana of Object.values(MICROSOFT_TIME_ZONES)) expect(isIanaTimeZone(iana)).toBe(true);
      expect(new Set(Object.values(MICROSOFT_TIME_ZONES)).size).toBe(75);
    });

    it('is account_unreachable for an account the user may not touch (106)', async () => {
      const error = await rejection(microsoft.readAccount({ accessToken: token, providerAccountId: '180999999' }));
      expect(error).toMatchObject({ kind: 'account_unreachable', providerCode: 'UserIsNotAuthorized', httpStatus: 500 });
    });

    it('finds Customer Management on the clientcenter host of the campaign host', () => {
      expect(customerManagementUrl('https://campaign.api.bingads.microsoft.com')).toBe(`https://clientcenter.api.bingads.microsoft.com${CUSTOMER_PATH}`);
      expect(customerManagementUrl('https://campaign.api.sandbox.bingads.microsoft.com')).toBe(
        `https://clientcenter.api.sandbox.bingads.microsoft.com${CUSTOMER_PATH}`,
      );
      expect(customerManagementUrl('https://127.0.0.1:8443')).toBe(`https://127.0.0.1:8443${CUSTOMER_PATH}`);
    });
  });

  describe('creating a campaign', () => {
    it('reads the account for its customer, then AddCampaigns a Paused Search campaign bidding MaxConversions', async () => {
      const campaign = unifiedCampaign({ name: 'Spring & <sale>' });
      const { providerResourceId } = await create(campaign);
      const [read, add] = fake.requests.slice(-2);
      expect(add.rawBody).toContain('<Name>Spring &amp; &lt;sale&gt; · dsp_b1</Name>');
      expect(read.headers.soapaction).toBe('GetAccount');
      expect(add.path).toBe(CAMPAIGN_PATH);
      expect(add.headers.soapaction).toBe('AddCampaigns');
      expect(soapHeader(add.rawBody, 'AuthenticationToken')).toBe(token);
      expect(soapHeader(add.rawBody, 'DeveloperToken')).toBe(fake.developerToken);
      expect(soapHeader(add.rawBody, 'CustomerAccountId')).toBe(USD);
      expect(soapHeader(add.rawBody, 'CustomerId')).toBe(fake.parentCustomerOf(USD));
      expect(sent()).toEqual({
        biddingScheme: 'MaxConversions',
        BudgetType: 'DailyBudgetStandard',
        DailyBudget: '12.34',
        Name: 'Spring & <sale> · dsp_b1', // sent escaped, read back by the fake as XML
        StartDate: '2027-01-04T04:00:00', // 09:00 UTC in New York
        Status: 'Paused',
        TimeZone: 'EasternTimeUSCanada',
        UseCampaignLevelDates: 'true',
        CampaignType: 'Search',
      });
      expect(providerResourceId).toBe(fake.created.at(-1)!.id);
    });

    it.each([
      ['conversion', 'Search', 'MaxConversions'],
      ['leads', 'Search', 'MaxConversions'],
      ['traffic', 'Search', 'MaxClicks'],
      ['awareness', 'Audience', 'ManualCpm'],
      ['engagement', 'Audience', 'MaxClicks'],
    ])('maps %s (no objective field) to a %s campaign bidding %s', async (objective, campaignType, scheme) => {
      await create(unifiedCampaign({ objective }));
      expect(sent()).toMatchObject({ CampaignType: campaignType, biddingScheme: scheme });
    });

    it('refuses app_installs before any call', async () => {
      const calls = fake.requests.length;
      await expect(create(unifiedCampaign({ objective: 'app_installs' }))).rejects.toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      expect(fake.requests.length).toBe(calls);
    });

    it('makes a lifetime budget LifetimeBudgetStandard with start and end dates in the account time zone', async () => {
      await create(unifiedCampaign({ budget: { type: 'lifetime', amount_micros: 900_000_000 }, schedule: { end_at: '2027-02-01T04:59:59Z' } }));
      expect(sent()).toMatchObject({
        BudgetType: 'LifetimeBudgetStandard',
        DailyBudget: '900.00',
        StartDate: '2027-01-04T04:00:00',
        EndDate: '2027-01-31T23:59:59',
      });
    });

    it('refuses a lifetime budget without an end before any call', async () => {
      await expect(create(unifiedCampaign({ budget: { type: 'lifetime' } }))).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'lifetime_budget_needs_end',
      });
    });

    it('writes major units exactly per currency: JPY 1500, KWD 1.250, USD 7.01', async () => {
      await create(unifiedCampaign({ budget: { currency: 'JPY', amount_micros: 1_500_000_000 } }), JPY);
      expect(sent()).toMatchObject({ DailyBudget: '1500', TimeZone: 'OsakaSapporoTokyo', StartDate: '2027-01-04T18:00:00' });
      await create(unifiedCampaign({ budget: { currency: 'KWD', amount_micros: 1_250_000 } }), KWD);
      expect(sent()).toMatchObject({ DailyBudget: '1.250', TimeZone: 'KuwaitRiyadh' });
      await create(unifiedCampaign({ budget: { amount_micros: 7_010_000 } }));
      expect(sent().DailyBudget).toBe('7.01');
    });

    it("keeps Microsoft's partial error code and message (validation): a campaign of another type holds the name, so none of the dispatch's is found", async () => {
      const campaign = unifiedCampaign();
      fake.plantCampaign(USD, `${campaign.name} · dsp_bshop1`, 'Shopping');
      const error = await rejection(
        microsoft.createCampaign({ accessToken: token, providerAccountId: USD, account: accounts[USD] }, { dispatchId: 'dsp_bshop1', campaign }),
      );
      expect(error).toMatchObject({
        kind: 'validation',
        providerCode: 'CampaignServiceCannotCreateDuplicateCampaign',
        message: 'microsoft_ads: An attempt was made to create a duplicate of a campaign that already exists.',
      });
      expect(fake.requests.at(-1)!.headers.soapaction).toBe('GetCampaignsByAccountId');
    });
  });

  describe("the dispatch's marker, and finding its campaign again", () => {
    const access = (accountId = USD) => ({ accessToken: token, providerAccountId: accountId, account: accounts[accountId] });
    const launch = (dispatchId: string, campaign = unifiedCampaign()) => microsoft.createCampaign(access(), { dispatchId, campaign });
    const find = (dispatchId: string) => microsoft.findCampaigns(access(), { dispatchId, campaign: unifiedCampaign() });
    const plantWithId = (id: string, name: string) =>
      fake.created.push({
        id,
        accountId: USD,
        kind: 'campaign',
        body: {
          biddingScheme: 'MaxClicks',
          BudgetType: 'DailyBudgetStandard',
          DailyBudget: '10.00',
          Name: name,
          Status: 'Paused',
          TimeZone: 'EasternTimeUSCanada',
          CampaignType: 'Search',
        },
      });

    it("shortens the partner's part, never the marker, to 128 characters", async () => {
      await launch('dsp_blong1', unifiedCampaign({ name: 'x'.repeat(200) }));
      expect(sent().Name).toBe(`${'x'.repeat(128 - ' · dsp_blong1'.length)} · dsp_blong1`);
    });

    it("lists the account's Search and Audience campaigns with GetCampaignsByAccountId, its customer read first: none", async () => {
      const calls = fake.requests.length;
      expect(await find('dsp_bnone1')).toEqual([]);
      const [read, list] = fake.requests.slice(calls);
      expect(fake.requests.length - calls).toBe(2);
      expect(read.headers.soapaction).toBe('GetAccount');
      expect([list.path, list.headers.soapaction]).toEqual([CAMPAIGN_PATH, 'GetCampaignsByAccountId']);
      expect([
        soapHeader(list.rawBody, 'AuthenticationToken'),
        soapHeader(list.rawBody, 'DeveloperToken'),
        soapHeader(list.rawBody, 'CustomerAccountId'),
        soapHeader(list.rawBody, 'CustomerId'),
      ]).toEqual([token, fake.developerToken, USD, fake.parentCustomerOf(USD)]);
      expect(list.rawBody).toContain(
        `<GetCampaignsByAccountIdRequest xmlns="https://bingads.microsoft.com/CampaignManagement/v13"><AccountId>${USD}</AccountId><CampaignType>Search Audience</CampaignType></GetCampaignsByAccountIdRequest>`,
      );
    });

    it('finds the one it made, of either type it makes', async () => {
      const search = await launch('dsp_bfound1');
      expect(await find('dsp_bfound1')).toEqual([{ providerResourceId: search.providerResourceId, createdAt: null }]);
      const audience = await launch('dsp_bfound2', unifiedCampaign({ objective: 'awareness' }));
      expect(await find('dsp_bfound2')).toEqual([{ providerResourceId: audience.providerResourceId, createdAt: null }]);
    });

    it('finds two oldest first, by id as a number (Microsoft keeps no creation time)', async () => {
      const { providerResourceId } = await launch('dsp_btwo1');
      plantWithId('99000001', 'Renamed by the partner · dsp_btwo1'); // fewer digits: older, though after in text order
      expect((await find('dsp_btwo1')).map((c) => c.providerResourceId)).toEqual(['99000001', providerResourceId]);
    });

    it('ignores a campaign whose name carries a longer id, or has the id elsewhere than its end', async () => {
      await launch('dsp_bnear1X');
      fake.plantCampaign(USD, 'About dsp_bnear1 and more');
      expect(await find('dsp_bnear1')).toEqual([]);
    });

    it('is transient when Microsoft fails the lookup (5xx)', async () => {
      fake.failNext(1, 503);
      await expect(find('dsp_bnone2')).rejects.toMatchObject({ kind: 'transient', httpStatus: 503 });
    });

    it('answers the campaign an earlier try made (the name in use) with found: true, making nothing more', async () => {
      const campaign = unifiedCampaign();
      fake.afterNextCreate('campaign', { kind: 'fail', status: 503 }); // made, then 503: the answer is lost
      await expect(launch('dsp_bagain1', campaign)).rejects.toMatchObject({ kind: 'transient' });
      const [made] = fake.campaignsFor('dsp_bagain1');
      expect(await launch('dsp_bagain1', campaign)).toEqual({ providerResourceId: made.id, found: true });
      expect(fake.campaignsFor('dsp_bagain1')).toHaveLength(1);
    });
  });

  describe('the dry run (no validate-only call in Campaign Management: the rules)', () => {
    const check = (campaign: CampaignSpec, account = accounts[USD]) =>
      microsoft.validateCampaign({ accessToken: token, providerAccountId: USD, account }, { dispatchId: 'dsp_bdry1', campaign });

    it('checks the Campaign a create would send without any call', async () => {
      const calls = fake.requests.length;
      expect(await check(unifiedCampaign())).toEqual({ checkedBy: 'rules', warnings: [] });
      expect(fake.requests.length).toBe(calls);
    });

    it('refuses what a create would refuse before its calls, as validation', async () => {
      const calls = fake.requests.length;
      await expect(check(unifiedCampaign({ objective: 'app_installs' }))).rejects.toMatchObject({ kind: 'validation', providerCode: 'objective_unsupported' });
      await expect(check(unifiedCampaign({ budget: { type: 'lifetime' } }))).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'lifetime_budget_needs_end',
      });
      await expect(check(unifiedCampaign(), { currency: 'USD', timezone: 'Europe/Lisbon' })).rejects.toMatchObject({
        kind: 'validation',
        providerCode: 'timezone_unsupported',
      });
      expect(fake.requests.length).toBe(calls);
    });
  });

  describe('errors (SOAP faults, HTTP 500)', () => {
    it('makes 109 AuthenticationTokenExpired auth', async () => {
      fake.expireToken(token);
      const error = await rejection(microsoft.readAccount({ accessToken: token, providerAccountId: USD }));
      expect(error).toMatchObject({ kind: 'auth', providerCode: 'AuthenticationTokenExpired', httpStatus: 500 });
      expect(error.message).not.toContain(token);
    });

    it('makes 105 InvalidCredentials auth', async () => {
      await expect(microsoft.readAccount({ accessToken: 'unknown', providerAccountId: USD })).rejects.toMatchObject({
        kind: 'auth',
        providerCode: 'InvalidCredentials',
      });
    });

    it('makes 117 CallRateExceeded rate_limited for the documented 60 s', async () => {
      fake.rateLimitNext(1, 1);
      const error = await rejection(create(unifiedCampaign()));
      expect(error).toMatchObject({ kind: 'rate_limited', providerCode: 'CallRateExceeded', retryAfterMs: 60_000 });
    });

    it('makes an InternalError fault (500) and a 503 page transient', async () => {
      fake.failNext(1, 500);
      await expect(create(unifiedCampaign())).rejects.toMatchObject({ kind: 'transient', providerCode: 'InternalError', httpStatus: 500 });
      fake.failNext(1, 503);
      await expect(create(unifiedCampaign())).rejects.toMatchObject({ kind: 'transient', providerCode: null, httpStatus: 503 });
    });

    it('is transient without a provider code when nothing listens, or nothing answers in time', async () => {
      const dispatcher = await fakeNetworkDispatcher();
      const down = new MicrosoftAds({ ...fake.settings(), apiUrl: await refusingLoopbackUrl() }, new NetworkHttp('microsoft_ads', 2_000, { dispatcher }));
      await expect(down.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
      const impatient = new MicrosoftAds(fake.settings(), new NetworkHttp('microsoft_ads', 300, { dispatcher }));
      fake.stallNext(1);
      await expect(impatient.readAccount({ accessToken: token, providerAccountId: USD })).rejects.toMatchObject({ kind: 'transient', providerCode: null });
    });
  });

  describe('reading SOAP answers in linear time', () => {
    const answerOf = (text: string) => ({ status: 500, headers: {}, text, json: undefined, retryAfterMs: null });

    it('reads each error element, nested in any prefix, with its code and message', () => {
      const xml =
        '<s:Fault><detail><e:AdApiFaultDetail><e:Errors><e:AdApiError><e:Code>105</e:Code><e:ErrorCode>InvalidCredentials</e:ErrorCode><e:Message>Bad</e:Message></e:AdApiError></e:Errors></e:AdApiFaultDetail></detail></s:Fault>';
      expect(xmlBlocks(xml, ['AdApiError', 'BatchError']).map((block) => block.name)).toEqual(['AdApiError']);
      expect(microsoftError(answerOf(xml))).toMatchObject({ kind: 'auth', providerCode: 'InvalidCredentials' });
    });

    it('gets through a 4 MiB answer of open tags that never close at once (a lazy match with a back-reference took minutes)', () => {
      const hostile = '<AdApiError>'.repeat(350_000) + '<BatchError a="' + 'x'.repeat(2_000) + '"' + '<OperationError>'.repeat(10_000);
      const started = process.hrtime.bigint();
      expect(microsoftError(answerOf(hostile))).toMatchObject({ kind: 'transient' });
      expect(xmlValues(hostile, 'Code')).toEqual([]);
      // Generous: linear is milliseconds here; the quadratic reading was minutes.
      expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(2_000);
    });
  });
});
