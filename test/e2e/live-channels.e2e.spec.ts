/**
 * Live launches on every ad network, end to end: `npm start`'s standalone process pointed at a
 * loopback HTTPS fake of each network (CHANNEL_<CHANNEL>_API_URL, _OAUTH_URL, _TOKEN_URL; the
 * fakes' CA trusted through NODE_EXTRA_CA_CERTS), called as a partner would. Per channel: an ad
 * account connected by token import and by the OAuth flow, a live launch that completes with the
 * network's id and sends the network exactly the campaign (checked field by field, per
 * CHANNELS.md, with the dispatch's marker in its name), a refused refresh that fails the dispatch and moves the connection (with its
 * signed webhook), and a rate limit that is waited out. All of it twice: on the standalone
 * process, and on the four apps as separate processes over a real nats-server.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as undiciRequest } from 'undici';
import { Channel } from '@campaign-ops/channels';
import { PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { closeFakeNetworkDispatcher, FakeNetwork, fakeNetworkCertificates, fakeNetworkDispatcher } from '../support/fake-networks';
import { EXPECTED_CAMPAIGN, LIVE_FAKES, LiveCampaignExpectation, LiveFake } from '../support/fake-networks/live-expectations';
import { eventually, openAccountWithKeys, PartnerClient } from '../support/partner-client';
import { Topology, TOPOLOGIES } from '../support/live-topology';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
/** The ad account every fake has: billing in USD, in New York (so account-time schedules show the offset). */
const ACCOUNT = { currency: 'USD', timezone: 'America/New_York' };
const campaign = (name: string) => ({
  name,
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
});
const CHANNELS = Object.keys(LIVE_FAKES) as Channel[];
const fake = (channel: Channel): LiveFake => LIVE_FAKES[channel] as LiveFake;
/** The ad account as the connection shows it (UTC where the network's account read has no time zone). */
const accountOf = (channel: Channel) => ({ currency: ACCOUNT.currency, timezone: fake(channel).reportedTimezone ?? ACCOUNT.timezone });

/** The networks that document a revocation call (CHANNELS.md "Revoking tokens"), which a delete makes. */
const REVOKING = ['google_ads', 'meta_ads', 'linkedin_ads', 'reddit_ads', 'x_ads'];

describe.each(TOPOLOGIES)('live launches on every ad network, on %s', (_name, topology) => {
  let dataDir: string;
  let service: Topology;
  let admin: PartnerClient;
  let receiver: PartnerReceiver;
  const fakes = {} as Record<Channel, FakeNetwork>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-live-'));
    for (const channel of CHANNELS) {
      fakes[channel] = await fake(channel).start({ accounts: [{ id: fake(channel).accountId, ...ACCOUNT }] });
    }
    const env: Record<string, string> = {
      ADMIN_TOKEN,
      NODE_EXTRA_CA_CERTS: (await fakeNetworkCertificates()).caCertPath,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,200ms',
      RATE_LIMIT_PER_SECOND: '1000',
      RATE_LIMIT_BURST: '1000',
      // Networks that name a minute or more are waited for at most this.
      CHANNEL_RETRY_MAX_WAIT: '2s',
      // Every line the services can write, so the token search below reads them all.
      LOG_LEVEL: 'debug',
    };
    for (const channel of CHANNELS) Object.assign(env, fakes[channel].env());
    service = await topology(dataDir, env);
    admin = new RecordingClient(service.url, ADMIN_TOKEN);
    receiver = await startPartnerReceiver();
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    await Promise.all(Object.values(fakes).map((fake) => fake.close()));
    await closeFakeNetworkDispatcher();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A fresh account with a live key and a webhook endpoint for connection and dispatch events. */
  async function livePartner(name: string): Promise<PartnerClient> {
    const keys = await openAccountWithKeys(admin, name);
    const live = new RecordingClient(service.url, keys.liveKey);
    const endpoint = await live.post('/v1/webhooks', {
      url: receiver.url,
      events: ['connection.active', 'connection.reauth_required', 'dispatch.completed', 'dispatch.failed'],
    });
    expect(endpoint.status).toBe(200);
    receiver.addSecret(endpoint.body.data.signing_secret);
    return live;
  }

  async function importToken(live: PartnerClient, channel: Channel, credentials: Record<string, string>) {
    const answer = await live.post('/v1/connections', { channel, provider_account_id: fake(channel).accountId, credentials });
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200, body: { success: true } });
    return answer.body.data;
  }

  async function launched(live: PartnerClient, channel: Channel, name: string, until: (dispatch: any) => boolean) {
    const answer = await live.post('/v1/campaigns', { channel, campaign: campaign(name) });
    expect({ status: answer.status, body: answer.body }).toMatchObject({ status: 200, body: { data: { status: 'accepted', environment: 'live' } } });
    const id = answer.body.data.id as string;
    return eventually(
      async () => {
        const dispatch = (await live.get(`/v1/dispatches/${id}`)).body.data;
        return until(dispatch) ? dispatch : undefined;
      },
      30_000,
      `dispatch ${id} of ${channel}`,
    );
  }

  describe.each(CHANNELS)('%s', (channel) => {
    const expectation = EXPECTED_CAMPAIGN[channel] as LiveCampaignExpectation;

    it('connects an ad account by token import, reading its currency and time zone, and launches live: completed with the network id, the request checked field by field', async () => {
      const live = await livePartner(`${channel} import`);
      const network = fakes[channel];
      const connection = await importToken(live, channel, fake(channel).credentials(network));
      expect(connection).toMatchObject({ channel, status: 'active', environment: 'live', provider_account_id: fake(channel).accountId, ...accountOf(channel) });
      expect(JSON.stringify(connection)).not.toMatch(/access_token|refresh_token/);

      const before = network.created.length;
      const dispatch = await launched(live, channel, `Spring ${channel}`, (d) => d.status !== 'accepted');
      const created = network.created.slice(before);
      expect(dispatch).toMatchObject({ status: 'completed', connection_id: connection.id, attempts: 1, error: null });
      expect(dispatch.provider_resource_id).toBe(expectation.providerResourceId(created));
      // The campaign carries its dispatch's marker (docs/api.md#dispatches-and-retries, "At most one campaign per dispatch").
      expectation.check(created, { name: `Spring ${channel} · ${dispatch.id}`, accountId: fake(channel).accountId });
    });

    it('deletes a connection: revoked here, and its grant revoked at the network where the network documents a way', async () => {
      const live = await livePartner(`${channel} delete`);
      const network = fakes[channel];
      const credentials = fake(channel).credentials(network);
      const connection = await importToken(live, channel, credentials);
      const before = network.requests.length;
      const deleted = await live.delete(`/v1/connections/${connection.id}`);
      expect({ status: deleted.status, connection: deleted.body.data?.status }).toEqual({ status: 200, connection: 'revoked' });
      const revocations = network.requests.slice(before);
      if (REVOKING.includes(channel)) {
        expect(network.revoked).toContain(credentials.refresh_token ?? credentials.access_token);
        expect(revocations).toHaveLength(1);
      } else {
        expect(revocations).toEqual([]);
      }
    });

    it("fails a budget in another currency than the ad account's before any call: currency_mismatch, 0 attempts", async () => {
      const live = await livePartner(`${channel} currency`);
      const network = fakes[channel];
      await importToken(live, channel, fake(channel).credentials(network));
      const before = network.requests.length;
      const answer = await live.post('/v1/campaigns', {
        channel,
        campaign: { ...campaign(`Euro ${channel}`), budget: { amount_micros: 50_000_000, currency: 'EUR', type: 'daily' } },
      });
      expect(answer.status).toBe(200);
      const dispatch = await eventually(
        async () => {
          const current = (await live.get(`/v1/dispatches/${answer.body.data.id}`)).body.data;
          return current.status !== 'accepted' ? current : undefined;
        },
        30_000,
        `dispatch of ${channel} in EUR`,
      );
      expect(dispatch).toMatchObject({
        status: 'failed',
        attempts: 0,
        error: { code: 'provider_validation_failed', provider_code: 'currency_mismatch', retryable: false },
      });
      expect(network.requests.slice(before)).toEqual([]);
    });

    it('connects by OAuth: the consent URL, the callback, and a 302 back to the partner', async () => {
      const live = await livePartner(`${channel} oauth`);
      const redirectUri = 'https://partner.example/connected?from=test';
      const started = await live.post('/v1/connections', { channel, provider_account_id: fake(channel).accountId, redirect_uri: redirectUri });
      expect({ status: started.status, data: started.body.data }).toMatchObject({ status: 200, data: { status: 'pending', channel } });
      const consent = new URL(started.body.data.authorization_url);
      expect(consent.origin + consent.pathname).toBe(fakes[channel].settings().oauthUrl);
      if (fake(channel).consentNamesCallback !== false) expect(consent.searchParams.get('redirect_uri')).toBe(`${service.url}/v1/connections/oauth/callback`);

      // The person's browser: the consent page sends it to our callback, which sends it to the partner.
      const atConsent = await undiciRequest(consent, { dispatcher: await fakeNetworkDispatcher() });
      expect(atConsent.statusCode).toBe(302);
      await atConsent.body.dump();
      const callback = await undiciRequest(String(atConsent.headers.location));
      await callback.body.dump();
      expect(callback.statusCode).toBe(302);
      const back = new URL(String(callback.headers.location));
      expect(back.origin + back.pathname).toBe('https://partner.example/connected');
      expect(Object.fromEntries(back.searchParams)).toEqual({ from: 'test', connection_id: started.body.data.id, status: 'active' });

      const connection = (await live.get(`/v1/connections/${started.body.data.id}`)).body.data;
      expect(connection).toMatchObject({ status: 'active', ...accountOf(channel) });
      await receiver.waitFor((e) => e.body.event === 'connection.active' && e.body.data.connection_id === connection.id, 15_000);
      const dispatch = await launched(live, channel, `OAuth ${channel}`, (d) => d.status !== 'accepted');
      expect(dispatch).toMatchObject({ status: 'completed' });
    });

    it('fails a launch with connection_reauth_required when the token is dead and the refresh refused; the connection moves and says so by a signed webhook', async () => {
      const live = await livePartner(`${channel} reauth`);
      const network = fakes[channel];
      const credentials = fake(channel).credentials(network);
      const connection = await importToken(live, channel, credentials);
      network.expireToken(credentials.access_token);
      network.refuseRefresh();
      try {
        const dispatch = await launched(live, channel, `Dead token ${channel}`, (d) => d.status !== 'accepted');
        expect(dispatch).toMatchObject({ status: 'failed', error: { code: 'connection_reauth_required', retryable: false } });
        expect((await live.get(`/v1/connections/${connection.id}`)).body.data).toMatchObject({ status: 'reauth_required', reauth_reason: expect.any(String) });
        const [webhook] = await receiver.waitFor((e) => e.body.event === 'connection.reauth_required' && e.body.data.connection_id === connection.id, 15_000);
        expect(webhook.body.data).toMatchObject({
          connection_id: connection.id,
          channel,
          status: 'reauth_required',
          provider_account_id: fake(channel).accountId,
          environment: 'live',
          reason: expect.any(String),
        });
        const refused = await live.post('/v1/campaigns', { channel, campaign: campaign('after') });
        expect(refused.status).toBe(422);
        expect(refused.body.error.code).toBe('connection_reauth_required');
        expect((await live.post(`/v1/dispatches/${dispatch.id}/retry`)).body.error.code).toBe('connection_reauth_required');

        // The partner connects the ad account again (a new connection replaces the old one): the
        // retried dispatch runs on the new connection and completes.
        network.acceptRefresh();
        const replacement = await importToken(live, channel, fake(channel).credentials(network));
        expect((await live.get(`/v1/connections/${connection.id}`)).body.data.status).toBe('revoked');
        const retried = await live.post(`/v1/dispatches/${dispatch.id}/retry`);
        expect(retried.body.data).toMatchObject({ status: 'accepted', connection_id: replacement.id });
        const done = await eventually(
          async () => {
            const current = (await live.get(`/v1/dispatches/${dispatch.id}`)).body.data;
            return current.status !== 'accepted' ? current : undefined;
          },
          30_000,
          `retried dispatch of ${channel}`,
        );
        expect(done).toMatchObject({ status: 'completed', connection_id: replacement.id });
      } finally {
        network.acceptRefresh();
      }
    });

    it("retries a rate-limited call after the network's delay, and completes", async () => {
      const live = await livePartner(`${channel} slow down`);
      const network = fakes[channel];
      await importToken(live, channel, fake(channel).credentials(network));
      const before = network.requests.length;
      network.rateLimitNext(1, 1);
      const dispatch = await launched(live, channel, `Busy ${channel}`, (d) => d.status !== 'accepted');
      expect(dispatch).toMatchObject({ status: 'completed', attempts: 2 });
      // The call after the refused one came no sooner than the network asked (within CHANNEL_RETRY_MAX_WAIT).
      const [refused, retried] = network.requests.slice(before);
      const wait = fake(channel).rateLimitWaitMs ?? 1_000;
      expect(retried.at - refused.at).toBeGreaterThanOrEqual((typeof wait === 'number' ? wait : wait(refused.at)) - 20);
    });
  });

  it('never shows a token: a known token planted on every network is in no log line, answer, webhook, event, stored row or file of the whole run', async () => {
    const planted = CHANNELS.map((channel) => ({
      channel,
      access: `PLANTEDat${channel}${randomBytes(12).toString('hex')}`,
      refresh: `PLANTEDrt${channel}${randomBytes(12).toString('hex')}`,
    }));
    const live = await livePartner('token search');
    for (const { channel, access, refresh } of planted) {
      const network = fakes[channel];
      network.issueAccessToken(access);
      network.issueRefreshToken(refresh);
      const connection = await importToken(
        live,
        channel,
        fake(channel).plantedCredentials?.(network, access, refresh) ?? { access_token: access, refresh_token: refresh },
      );
      // A launch with it, a refusal of it (refreshed with the planted refresh token), and the reads a partner makes.
      expect(await launched(live, channel, `Planted ${channel}`, (d) => d.status !== 'accepted')).toMatchObject({ status: 'completed' });
      // Refreshed with the planted refresh token where the network issues them, else the connection needs reauthorizing.
      network.expireToken(access);
      const refreshedOrNot = await launched(live, channel, `Refreshed ${channel}`, (d) => d.status !== 'accepted');
      expect(refreshedOrNot.status === 'completed' || refreshedOrNot.error.code === 'connection_reauth_required').toBe(true);
      await live.get(`/v1/connections/${connection.id}`);
      await live.get(`/v1/connections?channel=${channel}`);
      await live.post(`/v1/connections/${connection.id}/reauthorize`, { credentials: { access_token: 'not-a-token-the-network-knows' } });
    }
    const dispatches = (await live.get('/v1/dispatches?limit=100')).body.data as Array<{ id: string }>;
    for (const { id } of dispatches) await live.get(`/v1/dispatches/${id}/events`);
    await live.get('/v1/events?limit=100');

    const secrets = planted.flatMap(({ access, refresh }) => [access, refresh]);
    const hits = (where: string, text: string) => secrets.filter((secret) => text.includes(secret)).map((secret) => `${where}: ${secret}`);
    const found = [
      ...service.logLines().flatMap((line, i) => hits(`log line ${i}`, line)),
      ...RecordingClient.answers.flatMap((answer, i) => hits(`answer ${i}`, answer)),
      ...receiver.requests().flatMap((request, i) => hits(`webhook ${i}`, JSON.stringify(request))),
      ...service.storeDirs.flatMap((dir) => filesUnder(dir).flatMap((file) => hits(file, readFileSync(file).toString('latin1')))),
    ];
    expect(found).toEqual([]);
    // The search can find: the fakes did receive the planted tokens.
    for (const { channel, access } of planted) expect(JSON.stringify(fakes[channel].requests)).toContain(access);
  });
});

/** A partner client that keeps every answer it got (status, headers and body), for the token search. */
class RecordingClient extends PartnerClient {
  static readonly answers: string[] = [];
  override async call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const answer = await super.call<T>(method, path, body, headers);
    RecordingClient.answers.push(JSON.stringify({ status: answer.status, headers: Object.fromEntries(answer.headers), body: answer.body }));
    return answer;
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}
