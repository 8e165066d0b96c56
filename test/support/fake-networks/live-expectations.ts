/**
 * What each ad network must receive for the end-to-end tests' standard campaign (CHANNELS.md,
 * stated here independently of the adapters): "Spring …", objective `conversion`, a daily budget
 * of 50 USD (50,000,000 micros), starting 2026-12-01T09:00:00Z, on an ad account in USD and
 * America/New_York (UTC-5 in December). One entry per channel with a live adapter.
 */
import { Channel } from '@campaign-ops/channels';
import { FakeNetwork, FakeNetworkOptions } from './fake-network';
import { PinterestAdsFake } from './pinterest-ads.fake';
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

/** 2026-12-01T09:00:00Z */
const START_MS = Date.UTC(2026, 11, 1, 9, 0, 0);

const only = (created: Created, kind: string) => {
  const matching = created.filter((c) => c.kind === kind);
  expect(matching).toHaveLength(1);
  return matching[0];
};

export const LIVE_FAKES: Partial<Record<Channel, LiveFake>> = {
  snapchat_ads: { start: (o) => SnapchatAdsFake.start(o), accountId: '8f0a3c8e-3b1c-4b57-9a55-1a2b3c4d5e6f', credentials: withRefresh },
  pinterest_ads: { start: (o) => PinterestAdsFake.start(o), accountId: '549755885175', credentials: withRefresh, reportedTimezone: 'UTC' },
};

export const EXPECTED_CAMPAIGN: Partial<Record<Channel, LiveCampaignExpectation>> = {
  snapchat_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const body = only(created, 'campaign').body as Record<string, any>;
      expect(body).toMatchObject({ ad_account_id: accountId, name, status: 'PAUSED', daily_budget_micro: 50_000_000, objective_v2_properties: { objective_v2_type: 'SALES' } });
      expect(body.lifetime_spend_cap_micro).toBeUndefined();
      expect(Date.parse(body.start_time)).toBe(START_MS);
      expect(body.start_time).toMatch(/-05:00$/);
    },
  },
  pinterest_ads: {
    providerResourceId: (created) => only(created, 'campaign').id,
    check(created, { name, accountId }) {
      const body = only(created, 'campaign').body as Record<string, any>;
      expect(body).toMatchObject({ ad_account_id: accountId, name, status: 'PAUSED', objective_type: 'WEB_CONVERSION', daily_spend_cap: 50_000_000, start_time: START_MS / 1000 });
      expect(body.lifetime_spend_cap).toBeUndefined();
    },
  },
};
