/**
 * docs/api.md#dispatches-and-retries, "At most one campaign per dispatch", the dry run (`POST /v1/campaigns/validate`) and
 * §4's refresh of an imported token past its expiry, end to end on every channel: the service
 * (`npm start`'s standalone process, and the four apps over a real nats-server) pointed at
 * loopback HTTPS fakes of the ad networks that misbehave as real ones do: they make the campaign
 * and then time out, answer 503 or drop the connection; they make it twice; they hold the answer
 * while the service is killed. Called as a partner would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Channel } from '@campaign-ops/channels';
import { PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { closeFakeNetworkDispatcher, FakeNetwork, fakeNetworkCertificates } from '../support/fake-networks';
import { CreateFault } from '../support/fake-networks/fake-network';
import { LIVE_FAKES, LiveFake } from '../support/fake-networks/live-expectations';
import { eventually, openAccountWithKeys, PartnerClient } from '../support/partner-client';
import { Topology, TOPOLOGIES, TopologyStart } from '../support/live-topology';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const ACCOUNT = { currency: 'USD', timezone: 'America/New_York' };
const CHANNELS = Object.keys(LIVE_FAKES) as Channel[];
const fake = (channel: Channel): LiveFake => LIVE_FAKES[channel] as LiveFake;
/** The channels whose network has a validate-only call (CHANNELS.md): the dry run asks the network itself. */
const PROVIDER_CHECKED: Channel[] = ['google_ads', 'meta_ads'];
const campaign = (name: string, currency = 'USD') => ({
  name,
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency, type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
});
const FAULTS: Array<[string, CreateFault]> = [
  ['stalls past our timeout', { kind: 'stall' }],
  ['answers 503', { kind: 'fail', status: 503 }],
  ['drops the connection', { kind: 'drop' }],
];

/** The fakes, the service on them, and a partner with an active live connection on every channel. */
function liveSetup(topology: TopologyStart) {
  const world = {} as {
    dataDir: string;
    service: Topology;
    admin: PartnerClient;
    live: PartnerClient;
    receiver: PartnerReceiver;
    fakes: Record<Channel, FakeNetwork>;
  };
  beforeAll(async () => {
    world.dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-once-'));
    world.fakes = {} as Record<Channel, FakeNetwork>;
    for (const channel of CHANNELS) world.fakes[channel] = await fake(channel).start({ accounts: [{ id: fake(channel).accountId, ...ACCOUNT }] });
    const env: Record<string, string> = {
      ADMIN_TOKEN,
      NODE_EXTRA_CA_CERTS: (await fakeNetworkCertificates()).caCertPath,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      RATE_LIMIT_PER_SECOND: '1000',
      RATE_LIMIT_BURST: '1000',
      // A network that stalls is given up on after this: the try's outcome is then unknown.
      CHANNEL_TIMEOUT_MS: '1500',
      CHANNEL_RETRY_MAX_WAIT: '2s',
      // Over NATS, the launches of a dispatch-service that died are taken over after this.
      EXECUTOR_LEASE_MS: '3000',
    };
    for (const channel of CHANNELS) Object.assign(env, world.fakes[channel].env());
    world.service = await topology(world.dataDir, env);
    world.admin = new PartnerClient(world.service.url, ADMIN_TOKEN);
    world.receiver = await startPartnerReceiver();
    const keys = await openAccountWithKeys(world.admin, 'at most once');
    world.live = new PartnerClient(world.service.url, keys.liveKey);
    for (const channel of CHANNELS) {
      const answer = await world.live.post('/v1/connections', {
        channel,
        provider_account_id: fake(channel).accountId,
        credentials: fake(channel).credentials(world.fakes[channel]),
      });
      expect({ channel, status: answer.status, body: answer.body }).toMatchObject({ channel, status: 200, body: { data: { status: 'active' } } });
    }
  }, 90_000);
  afterAll(async () => {
    await world.service?.stop();
    await world.receiver?.close();
    await Promise.all(Object.values(world.fakes ?? {}).map((f) => f.close()));
    await closeFakeNetworkDispatcher();
    rmSync(world.dataDir, { recursive: true, force: true });
  });
  return world;
}

async function launch(partner: PartnerClient, channel: Channel, name: string): Promise<string> {
  const answer = await partner.post('/v1/campaigns', { channel, campaign: campaign(name) });
  expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200, body: { data: { status: 'accepted', environment: 'live' } } });
  return answer.body.data.id;
}

const settled = (partner: PartnerClient, id: string, timeoutMs = 30_000) =>
  eventually(
    async () => {
      const dispatch = (await partner.get(`/v1/dispatches/${id}`)).body.data;
      return dispatch.status !== 'accepted' ? dispatch : undefined;
    },
    timeoutMs,
    `dispatch ${id} to settle`,
  );

const historyOf = async (partner: PartnerClient, id: string) =>
  (await partner.get(`/v1/dispatches/${id}/events`)).body.data as Array<{ type: string; data: Record<string, unknown> }>;

describe.each(TOPOLOGIES)('at most one campaign per dispatch, on %s', (_name, topology) => {
  const world = liveSetup(topology);

  describe.each(CHANNELS)('%s', (channel) => {
    it.each(FAULTS)(
      'the network makes the campaign, then %s: the dispatch completes with that campaign (reconciled), the network holds one',
      async (_fault, fault) => {
        const network = world.fakes[channel];
        network.afterNextCreate('campaign', fault);
        const id = await launch(world.live, channel, `Once ${channel}`);
        const dispatch = await settled(world.live, id);
        const campaigns = network.campaignsFor(id);
        expect(campaigns).toHaveLength(1);
        expect(dispatch).toMatchObject({ status: 'completed', provider_resource_id: campaigns[0].id, error: null });
        const history = await historyOf(world.live, id);
        expect(history.map((e) => e.type)).toEqual([
          'DispatchAccepted',
          'DispatchAttemptStarted',
          'DispatchAttemptFailed',
          'DispatchAttemptStarted',
          'DispatchCompleted',
        ]);
        expect(history[2].data).toMatchObject({ outcomeUnknown: true });
        expect(history[3].data).toMatchObject({ lookup: true });
        expect(history[4].data).toMatchObject({ providerResourceId: campaigns[0].id, reconciled: true });
      },
    );

    it('a lookup that finds two campaigns with the marker: completed with the oldest, the other named as a warning in the history', async () => {
      const network = world.fakes[channel];
      network.afterNextCreate('campaign', { kind: 'twice' });
      const id = await launch(world.live, channel, `Twice ${channel}`);
      const dispatch = await settled(world.live, id);
      const [oldest, other] = network.campaignsFor(id);
      expect(dispatch).toMatchObject({ status: 'completed', provider_resource_id: oldest.id });
      const completed = (await historyOf(world.live, id)).pop()!;
      expect(completed.data).toMatchObject({ reconciled: true, duplicateProviderResourceIds: [other.id], warning: expect.stringContaining(other.id) });
    });
  });
});

describe.each(TOPOLOGIES)('at most one campaign per dispatch across a kill -9 of the process that launches, on %s', (_name, topology) => {
  const world = liveSetup(topology);

  it('every channel: killed while the networks hold their answers to the creates they made, then restarted: each dispatch completes with the one campaign', async () => {
    for (const channel of CHANNELS) world.fakes[channel].afterNextCreate('campaign', { kind: 'hold' });
    const ids = {} as Record<Channel, string>;
    for (const channel of CHANNELS) ids[channel] = await launch(world.live, channel, `Crash ${channel}`);
    await Promise.all(CHANNELS.map((channel) => world.fakes[channel].whenHolding()));
    await world.service.launcher.kill();
    for (const channel of CHANNELS) world.fakes[channel].releaseHeld();
    await world.service.launcher.start();

    for (const channel of CHANNELS) {
      const dispatch = await settled(world.live, ids[channel], 60_000);
      const campaigns = world.fakes[channel].campaignsFor(ids[channel]);
      expect({ channel, campaigns: campaigns.length }).toEqual({ channel, campaigns: 1 });
      expect({ channel, dispatch }).toMatchObject({ channel, dispatch: { status: 'completed', provider_resource_id: campaigns[0].id } });
      const history = await historyOf(world.live, ids[channel]);
      expect(history.filter((e) => e.type === 'DispatchAttemptStarted').map((e) => e.data.lookup)).toEqual([false, true]);
      expect(history.pop()!.data).toMatchObject({ reconciled: true });
    }
  }, 120_000);
});

describe.each(TOPOLOGIES)('the dry run, and a token imported past its expiry, on %s', (_name, topology) => {
  const world = liveSetup(topology);

  /** What a partner can see of its account: dispatches, balance, events. */
  const footprint = async (partner: PartnerClient) => ({
    dispatches: (await partner.get('/v1/dispatches?limit=100')).body.data.length,
    credits: (await partner.get('/v1/account')).body.data.credits_balance,
    events: (await partner.get('/v1/events?limit=100')).body.data.length,
  });

  it.each(CHANNELS)(
    "%s: checked as a launch would be (by the network's validate-only call where it has one), and nothing is made, charged, stored or sent",
    async (channel) => {
      const network = world.fakes[channel];
      const endpoint = await world.live.post('/v1/webhooks', {
        url: world.receiver.url,
        events: ['dispatch.accepted', 'dispatch.completed', 'dispatch.failed'],
      });
      const before = await footprint(world.live);
      const [created, requests, webhooks] = [network.created.length, network.requests.length, world.receiver.requests().length];

      const answer = await world.live.post(
        '/v1/campaigns/validate',
        { channel, campaign: campaign(`Dry ${channel}`) },
        { 'Idempotency-Key': `dry-${channel}` },
      );
      expect({ status: answer.status, body: answer.body }).toMatchObject({
        status: 200,
        body: { success: true, data: { valid: true, channel, checked_by: PROVIDER_CHECKED.includes(channel) ? 'provider' : 'rules', warnings: [] } },
      });
      const sent = network.requests.slice(requests).filter((r) => !r.path.includes('token'));
      if (channel === 'google_ads') {
        expect(sent).toHaveLength(1);
        const body = sent[0].body as { validateOnly?: boolean; mutateOperations?: Array<Record<string, { create?: Record<string, unknown> }>> };
        expect(sent[0].path).toBe(`/v23/customers/${fake(channel).accountId}/googleAds:mutate`);
        expect(body.validateOnly).toBe(true);
        const [budget, made] = body.mutateOperations ?? [];
        expect(budget.campaignBudgetOperation.create).toMatchObject({
          resourceName: `customers/${fake(channel).accountId}/campaignBudgets/-1`,
          amountMicros: '50000000',
          period: 'DAILY',
        });
        expect(made.campaignOperation.create).toMatchObject({
          name: expect.stringMatching(/^Dry google_ads · dsp_/),
          campaignBudget: `customers/${fake(channel).accountId}/campaignBudgets/-1`,
          status: 'PAUSED',
        });
      } else if (channel === 'meta_ads') {
        expect(sent).toHaveLength(1);
        expect(sent[0].path).toBe(`/v24.0/act_${fake(channel).accountId}/campaigns`);
        expect(sent[0].body).toMatchObject({
          execution_options: ['validate_only'],
          name: expect.stringMatching(/^Dry meta_ads · dsp_/),
          objective: 'OUTCOME_SALES',
          status: 'PAUSED',
          special_ad_categories: [],
          daily_budget: expect.anything(),
        });
      } else {
        // No validate-only call at this network: its rules are applied here, and it is not called at all.
        expect(sent).toEqual([]);
      }
      expect(network.created.length).toBe(created);
      // The same key again is answered afresh, never replayed (idempotency keys are ignored here).
      const again = await world.live.post('/v1/campaigns/validate', { channel, campaign: campaign(`Dry ${channel}`) }, { 'Idempotency-Key': `dry-${channel}` });
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(await footprint(world.live)).toEqual(before);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(world.receiver.requests().length).toBe(webhooks);
      await world.live.delete(`/v1/webhooks/${endpoint.body.data.id}`);
    },
  );

  it("answers 422 provider_validation_failed with the network's own message and code when the network refuses the campaign", async () => {
    // Meta refuses a campaign without special_ad_categories; here: a daily budget below what the fake's Meta takes is refused by the network itself.
    const answer = await world.live.post('/v1/campaigns/validate', {
      channel: 'meta_ads',
      campaign: { ...campaign('Refused'), budget: { amount_micros: 10_000, currency: 'USD', type: 'daily' } },
    });
    expect(answer.status).toBe(422);
    expect(answer.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'provider_validation_failed',
      provider_code: expect.any(String),
      message: expect.any(String),
    });
  });

  it('answers 422 provider_validation_failed / currency_mismatch for a budget in another currency than the ad account bills in, calling no network', async () => {
    const requests = world.fakes.tiktok_ads.requests.length;
    const answer = await world.live.post('/v1/campaigns/validate', { channel: 'tiktok_ads', campaign: campaign('Euro', 'EUR') });
    expect({ status: answer.status, error: answer.body.error }).toMatchObject({
      status: 422,
      error: { code: 'provider_validation_failed', provider_code: 'currency_mismatch' },
    });
    expect(world.fakes.tiktok_ads.requests.length).toBe(requests);
  });

  it('checks a test key against the sandbox: valid, or 422 for [sandbox:fail] and a budget below the channel minimum; 400 for a bad body', async () => {
    const keys = await openAccountWithKeys(world.admin, 'dry sandbox');
    const test = new PartnerClient(world.service.url, keys.testKey);
    expect((await test.post('/v1/campaigns/validate', { channel: 'tiktok_ads', campaign: campaign('Fine') })).body).toMatchObject({
      data: { valid: true, channel: 'tiktok_ads', checked_by: 'sandbox', warnings: [] },
    });
    const failing = await test.post('/v1/campaigns/validate', { channel: 'tiktok_ads', campaign: campaign('Nope [sandbox:fail]') });
    expect({ status: failing.status, error: failing.body.error }).toMatchObject({
      status: 422,
      error: { code: 'provider_validation_failed', provider_code: 'SANDBOX_VALIDATION_FAILED' },
    });
    const small = await test.post('/v1/campaigns/validate', {
      channel: 'tiktok_ads',
      campaign: { ...campaign('Small'), budget: { amount_micros: 1_000_000, currency: 'USD', type: 'daily' } },
    });
    expect({ status: small.status, error: small.body.error }).toMatchObject({
      status: 422,
      error: { code: 'provider_validation_failed', provider_code: 'budget_below_minimum' },
    });
    const bad = await test.post('/v1/campaigns/validate', {
      channel: 'tiktok_ads',
      campaign: { ...campaign('Bad'), budget: { amount_micros: 5, currency: 'usd', type: 'daily' } },
    });
    expect({ status: bad.status, error: bad.body.error }).toMatchObject({
      status: 400,
      error: { code: 'parameter_invalid', param: 'campaign.budget.currency' },
    });
    expect((await test.get('/v1/dispatches')).body.data).toEqual([]);
  });

  it('a live key without a connection for the channel answers 422 connection_required, as a launch would', async () => {
    const keys = await openAccountWithKeys(world.admin, 'dry unconnected');
    const answer = await new PartnerClient(world.service.url, keys.liveKey).post('/v1/campaigns/validate', {
      channel: 'google_ads',
      campaign: campaign('Nowhere'),
    });
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 422, code: 'connection_required' });
  });

  describe('an access token imported after it expired', () => {
    const expiredAt = '2026-01-01T00:00:00.000Z';

    it('is refreshed with its refresh token before the live check: active, and a launch uses the new token', async () => {
      const keys = await openAccountWithKeys(world.admin, 'migrated');
      const partner = new PartnerClient(world.service.url, keys.liveKey);
      const network = world.fakes.google_ads;
      const old = network.issueAccessToken();
      network.expireToken(old);
      const refreshToken = network.issueRefreshToken();
      const before = network.requests.length;
      const imported = await partner.post('/v1/connections', {
        channel: 'google_ads',
        provider_account_id: fake('google_ads').accountId,
        credentials: { access_token: old, refresh_token: refreshToken, expires_at: expiredAt },
      });
      expect({ status: imported.status, data: imported.body.data }).toMatchObject({ status: 200, data: { status: 'active', currency: 'USD' } });
      expect(Date.parse(imported.body.data.expires_at)).toBeGreaterThan(Date.now());
      const [refresh, check] = network.requests.slice(before);
      expect(refresh.body).toMatchObject({ grant_type: 'refresh_token', refresh_token: refreshToken });
      const fresh = /^Bearer (.+)$/.exec(check.headers.authorization ?? '')?.[1];
      expect(fresh).toBeDefined();
      expect(fresh).not.toBe(old);

      const dispatch = await settled(partner, await launch(partner, 'google_ads', 'Migrated'));
      expect(dispatch).toMatchObject({ status: 'completed' });
      expect(network.lastRequest(/campaigns:mutate$/).headers.authorization).toBe(`Bearer ${fresh}`);
    });

    it('with a dead refresh token: 400 credentials_invalid, and nothing is active', async () => {
      const keys = await openAccountWithKeys(world.admin, 'migrated dead');
      const partner = new PartnerClient(world.service.url, keys.liveKey);
      const network = world.fakes.google_ads;
      const old = network.issueAccessToken();
      network.expireToken(old);
      const answer = await partner.post('/v1/connections', {
        channel: 'google_ads',
        provider_account_id: fake('google_ads').accountId,
        credentials: { access_token: old, refresh_token: 'rt-never-issued', expires_at: expiredAt },
      });
      expect({ status: answer.status, error: answer.body.error }).toMatchObject({
        status: 400,
        error: { code: 'credentials_invalid', param: 'credentials.refresh_token' },
      });
      expect((await partner.get('/v1/connections')).body.data).toEqual([]);
    });
  });
});
