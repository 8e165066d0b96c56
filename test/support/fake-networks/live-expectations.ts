/**
 * What each ad network must receive for the end-to-end tests' standard campaign (CHANNELS.md,
 * stated here independently of the adapters): "Spring …", objective `conversion`, a daily budget
 * of 50 USD (50,000,000 micros), starting 2026-12-01T09:00:00Z, on an ad account in USD and
 * America/New_York (UTC-5 in December). One entry per channel with a live adapter.
 */
import { Channel } from '@campaign-ops/channels';
import { FakeNetwork, FakeNetworkOptions } from './fake-network';
import { AmazonAdsFake } from './amazon-ads.fake';
import { GoogleAdsFake } from './google-ads.fake';
import { LinkedinAdsFake } from './linkedin-ads.fake';
import { MetaAdsFake } from './meta-ads.fake';
import { MicrosoftAdsFake } from './microsoft-ads.fake';
import { TiktokAdsFake } from './tiktok-ads.fake';
import { XAdsFake } from './x-ads.fake';
import { PinterestAdsFake } from './pinterest-ads.fake';
import { RedditAdsFake } from './reddit-ads.fake';
import { SnapchatAdsFake } from './snapchat-ads.fake';

type Created = FakeNetwork['created'];

export interface LiveFake {
  start(options?: FakeNetworkOptions): Promise<FakeNetwork>;
  /** The ad account id as a partner sends it in `provider_account_id`. */
  accountId: string;
  /** Credentials a partner imports (the fake issued them). */
  credentials(fake: FakeNetwork): { access_token: string; refresh_token?: string };
  /** Credentials carrying planted token values, where the network's differ from {access_token, refresh_token}. */
  plantedCredentials?(fake: FakeNetwork, access: string, refresh: string): { access_token: string; refresh_token?: string };
  /**
   * The least wait before the retry of a call rate-limited with a 1 s delay: that 1 s where the
   * network names its delay in seconds, the executor's backoff (500 ms) where it names none, and
   * CHANNEL_RETRY_MAX_WAIT (the e2e's 2 s) where it names longer (a minute, "midnight UTC").
   */
  rateLimitWaitMs?: number | ((refusedAt: number) => number);
  /** False where the consent URL does not carry our callback (X: it went with the request-token call). */
  consentNamesCallback?: boolean;
  /** The time zone the connection gets when the network's account read has none (e.g. UTC). */
  reportedTimezone?: string;
}

export interface LiveCampaignExpectation {
  /** The dispatch's `provider_resource_id`: the network's id of what it created. */
  providerResourceId(created: Created): string;
  /** Throws (with Jest's expect) unless the network received the standard campaign. */
  check(created: Created, launch: { name: string; accountId: string }): void;
}

const withRefresh = (fake: FakeNetwork) => ({ access_token: fake.issueAccessToken(), refresh_token: fake.issueRefreshToken() });
/** Networks that issue no refresh token (Meta's long-lived tokens, TikTok's, X's OAuth 1.0a user tokens). */
const accessOnly = (fake: FakeNetwork) => ({ access_token: fake.issueAccessToken() });

/** 2026-12-01T09:00:00Z */
const START_MS = Date.UTC(2026, 11, 1, 9, 0, 0);

const only = (created: Created, kind: string) => {
  const matching = created.filter((c) => c.kind === kind);
  expect(matching).toHaveLength(1);
  return matching[0];
};

export const LIVE_FAKES: Partial<Record<Channel, LiveFake>> = {
  google_ads: { start: (o) => GoogleAdsFake.start(o), accountId: '1234567890', credentials: withRefresh },
  // Meta names its wait in minutes (X-Business-Use-Case-Usage), Microsoft documents 60 s, LinkedIn "until midnight UTC".
  meta_ads: { start: (o) => MetaAdsFake.start(o), accountId: '1029384756', credentials: accessOnly, rateLimitWaitMs: 2_000 },
  tiktok_ads: { start: (o) => TiktokAdsFake.start(o), accountId: '7012345678901234567', credentials: accessOnly, rateLimitWaitMs: 500 },
  linkedin_ads: { start: (o) => LinkedinAdsFake.start(o), accountId: '508765432', credentials: withRefresh, reportedTimezone: 'UTC', rateLimitWaitMs: 2_000 },
  microsoft_ads: { start: (o) => MicrosoftAdsFake.start(o), accountId: '149876543', credentials: withRefresh, rateLimitWaitMs: 2_000 },
  x_ads: {
    start: (o) => XAdsFake.start(o),
    accountId: '18ce54d4x5t',
    credentials: accessOnly,
    consentNamesCallback: false,
    // X names an epoch second (x-account-rate-limit-reset), not a duration: until the next whole second.
    rateLimitWaitMs: (refusedAt) => (Math.floor(refusedAt / 1000) + 1) * 1000 - refusedAt,
    // A connection's access_token is `<oauth_token>:<oauth_token_secret>`.
    plantedCredentials: (fake, access) => ({ access_token: fake.issueAccessToken(access) }),
  },
  amazon_ads: { start: (o) => AmazonAdsFake.start(o), accountId: 'A2EUQ1WTGCTBG2', credentials: withRefresh },
  reddit_ads: { start: (o) => RedditAdsFake.start(o), accountId: 't2_ab12cd', credentials: withRefresh },
  snapchat_ads: { start: (o) => SnapchatAdsFake.start(o), accountId: '8f0a3c8e-3b1c-4b57-9a55-1a2b3c4d5e6f', credentials: withRefresh },
  pinterest_ads: { start: (o) => PinterestAdsFake.start(o), accountId: '549755885175', credentials: withRefresh, reportedTimezone: 'UTC' },
};

export const EXPECTED_CAMPAIGN: Partial<Record<Channel, LiveCampaignExpectation>> = {
  google_ads: {
    // The campaign id of `customers/{cid}/campaigns/{id}`.
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const budget = only(created, 'campaign_budget');
      const campaign = only(created, 'campaign');
      expect(budget).toMatchObject({ accountId, body: { amountMicros: '50000000', deliveryMethod: 'STANDARD', period: 'DAILY' } });
      expect(campaign.accountId).toBe(accountId);
      expect(campaign.body).toMatchObject({
        name,
        status: 'PAUSED',
        campaignBudget: `customers/${accountId}/campaignBudgets/${budget.id}`,
        maximizeConversions: {},
        // v23+: in the account's time zone (New York, UTC-5 in December).
        startDateTime: '2026-12-01 04:00:00',
      });
    },
  },
  meta_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const campaign = only(created, 'campaign');
      expect(campaign.accountId).toBe(accountId);
      // 50 USD in cents; the campaign carries the budget; special_ad_categories is required.
      expect(campaign.body).toMatchObject({ name, objective: 'OUTCOME_SALES', status: 'PAUSED', special_ad_categories: [] });
      expect(String((campaign.body as Record<string, unknown>).daily_budget)).toBe('5000');
      expect((campaign.body as Record<string, unknown>).lifetime_budget).toBeUndefined();
    },
  },
  tiktok_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const campaign = only(created, 'campaign');
      expect(campaign.body).toMatchObject({ advertiser_id: accountId, campaign_name: name, budget_mode: 'BUDGET_MODE_DAY', budget: 50 });
      expect(['CONVERSIONS', 'WEB_CONVERSIONS']).toContain((campaign.body as Record<string, unknown>).objective_type);
    },
  },
  linkedin_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name }) {
      const group = only(created, 'campaign_group');
      const campaign = only(created, 'campaign');
      expect(campaign.body).toMatchObject({
        name,
        objectiveType: 'WEBSITE_CONVERSION',
        dailyBudget: { amount: expect.stringMatching(/^50(\.0+)?$/), currencyCode: 'USD' },
        runSchedule: { start: START_MS },
        campaignGroup: `urn:li:sponsoredCampaignGroup:${group.id}`,
      });
      expect((campaign.body as Record<string, unknown>).totalBudget).toBeUndefined();
    },
  },
  microsoft_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const campaign = only(created, 'campaign');
      expect(campaign.accountId).toBe(accountId);
      // Major units, a daily standard budget, MaxConversions bidding, the account's time zone enum.
      expect(campaign.body).toMatchObject({ Name: name, BudgetType: 'DailyBudgetStandard', Status: 'Paused', TimeZone: 'EasternTimeUSCanada' });
      expect(Number((campaign.body as Record<string, unknown>).DailyBudget)).toBe(50);
      expect(JSON.stringify((campaign.body as Record<string, unknown>).biddingScheme)).toContain('MaxConversions');
    },
  },
  x_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const campaign = only(created, 'campaign');
      const lineItem = only(created, 'line_item');
      expect(campaign.accountId).toBe(accountId);
      expect(campaign.body).toMatchObject({ name, daily_budget_amount_local_micro: '50000000' });
      // The objective and the schedule live on the line item.
      expect(lineItem.body).toMatchObject({ campaign_id: campaign.id, objective: 'WEBSITE_CONVERSIONS' });
      expect(Date.parse((lineItem.body as { start_time: string }).start_time)).toBe(START_MS);
    },
  },
  amazon_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const campaign = only(created, 'campaign');
      expect(campaign.accountId).toBe(accountId);
      expect(campaign.body).toMatchObject({ name, state: 'PAUSED', startDateTime: '2026-12-01T09:00:00Z' });
      expect(JSON.stringify((campaign.body as Record<string, unknown>).budgets)).toContain('"recurrenceTimePeriod":"DAILY"');
      expect(JSON.stringify((campaign.body as Record<string, unknown>).budgets)).toContain('"monetaryBudget":{"value":50}');
    },
  },
  reddit_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const campaign = only(created, 'campaign');
      expect(campaign.accountId).toBe(accountId);
      expect(campaign.body).toMatchObject({ name, objective: 'CONVERSIONS', configured_status: 'PAUSED', goal_type: 'DAILY_SPEND', goal_value: 50_000_000 });
      expect(Date.parse((campaign.body as { start_time: string }).start_time)).toBe(START_MS);
    },
  },
  snapchat_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const body = only(created, 'campaign').body as Record<string, any>;
      expect(body).toMatchObject({
        ad_account_id: accountId,
        name,
        status: 'PAUSED',
        daily_budget_micro: 50_000_000,
        objective_v2_properties: { objective_v2_type: 'SALES' },
      });
      expect(body.lifetime_spend_cap_micro).toBeUndefined();
      expect(Date.parse(body.start_time)).toBe(START_MS);
      expect(body.start_time).toMatch(/-05:00$/);
    },
  },
  pinterest_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const body = only(created, 'campaign').body as Record<string, any>;
      expect(body).toMatchObject({
        ad_account_id: accountId,
        name,
        status: 'PAUSED',
        objective_type: 'WEB_CONVERSION',
        daily_spend_cap: 50_000_000,
        start_time: START_MS / 1000,
      });
      expect(body.lifetime_spend_cap).toBeUndefined();
    },
  },
};
