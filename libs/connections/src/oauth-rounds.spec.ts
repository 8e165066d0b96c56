import { createHash } from 'node:crypto';
import { Outcome } from '@campaign-ops/api-errors';
import { ProviderError } from '@campaign-ops/channels';
import { callerOf, connectionsHarness, ConnectionsHarness, InMemoryNetwork, settingsFor } from '@campaign-ops/testing/connections';
import { indexedOnly } from '@campaign-ops/testing/read-store';
import { ConnectionStore } from './connection-store';
import { OAuthRounds, SPENT_STATE_WINDOW_MS, pkceFor } from './oauth-rounds';

/** A network whose consent starts with a call and comes back without `code` (X's OAuth 1.0a). */
class ConsentByCallNetwork extends InMemoryNetwork {
  override refuseClient = false;
  readonly started: Array<{ state: string; redirectUri: string }> = [];
  override authorizationUrl(): string {
    throw new ProviderError('validation', 'use startConsent()', 'oauth1_consent_is_async');
  }
  async startConsent(request: { state: string; redirectUri: string }): Promise<string> {
    // As XAds classifies X's 401 to the app-signed request-token call: the operator's OAuth client.
    if (this.refuseClient) throw new ProviderError('validation', "x_ads refused this service's OAuth client (request token: 32)", 'invalid_client', 401);
    this.started.push(request);
    return `https://consent.x.example/oauth/authorize?oauth_token=req-${this.started.length}`;
  }
  callbackCode(query: Record<string, string | undefined>, binding?: string | null): string | null {
    if (binding && query.oauth_token !== binding && !query.denied)
      throw new ProviderError('auth', 'the request token of another round', 'request_token_mismatch');
    return query.denied || !query.oauth_verifier ? null : `${query.oauth_token}:${query.oauth_verifier}`;
  }
  consentBinding(authorizationUrl: string): string | null {
    return new URL(authorizationUrl).searchParams.get('oauth_token');
  }
}

const live = callerOf('acct_1', 'live');
const test = callerOf('acct_1', 'test');
const META_EUR = { currency: 'EUR', timezone: 'Europe/Berlin' };
const CALLBACK = 'https://api.campaign-ops.example/v1/connections/oauth/callback';
const BACK = 'https://partner.example/connected?tenant=7';

describe('connections: OAuth rounds', () => {
  let network: InMemoryNetwork;
  let h: ConnectionsHarness;
  const value = <T>(outcome: Outcome<T>): T => {
    if (!outcome.ok) throw new Error(`expected success, got ${JSON.stringify(outcome.error)}`);
    return outcome.value;
  };
  /** What the account registered (the gateway sends it along with every round). */
  const REGISTERED = ['https://partner.example/connected', 'http://localhost:8080/back'];
  const start = async (
    overrides: { redirectUri?: string; channel?: 'meta_ads' | 'google_ads' | 'tiktok_ads'; providerAccountId?: string; registered?: string[] } = {},
  ) =>
    h.commands.create({
      caller: live,
      channel: overrides.channel ?? 'meta_ads',
      providerAccountId: overrides.providerAccountId ?? 'act_42',
      redirectUri: overrides.redirectUri ?? BACK,
      oauthRedirectUris: overrides.registered ?? REGISTERED,
    });
  const started = async (providerAccountId = 'act_42') => {
    const connection = value(await start({ providerAccountId })) as { id: string; authorization_url: string };
    return { ...connection, state: new URL(connection.authorization_url).searchParams.get('state')! };
  };
  const callback = (query: { state?: string; code?: string; error?: string }) => h.rounds.complete({ requestId: 'req_cb', ...query });
  const location = (outcome: Outcome<{ location: string }>) => new URL(value(outcome).location);

  beforeEach(() => {
    network = new InMemoryNetwork('meta_ads').account('act_42', META_EUR, 'ignored');
    network.code('code-1', { accessToken: 'oauth-access', refreshToken: 'oauth-refresh', expiresAt: '2027-01-01T00:00:00.000Z' }, ['act_42']);
    h = connectionsHarness(
      { meta_ads: network, google_ads: new InMemoryNetwork('google_ads') },
      { meta_ads: settingsFor('meta_ads', true), google_ads: settingsFor('google_ads', false) },
    );
  });
  afterEach(async () => {
    jest.useRealTimers();
    await h.close();
  });

  describe('starting a round', () => {
    it("answers the connection pending, with the network's consent page: our callback, its scopes and a state", async () => {
      const connection = value(await start());
      expect(connection).toMatchObject({
        status: 'pending',
        provider_account_id: 'act_42',
        scopes: ['ads_management', 'ads_read'],
        currency: null,
        timezone: null,
      });
      const url = new URL((connection as { authorization_url: string }).authorization_url);
      expect(url.origin + url.pathname).toBe('https://consent.network.example/dialog');
      expect(url.searchParams.get('redirect_uri')).toBe(CALLBACK);
      expect(url.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(value(await h.queries.get({ caller: live, id: connection.id }))).not.toHaveProperty('authorization_url');
    });

    it('keeps only the hash of the state, nowhere the state itself', async () => {
      const { id, state } = await started();
      const hash = createHash('sha256').update(state).digest('hex');
      expect(await h.store.oauthStates.get(hash)).toMatchObject({ connection_id: id, redirect_uri: BACK });
      const stored = JSON.stringify({
        events: await h.events.readStream(`connection-${id}`),
        views: await h.store.views.find({}, {}),
        states: await h.store.oauthStates.find({}, {}),
      });
      expect(stored).not.toContain(state);
      expect(stored).toContain(hash);
    });

    it('answers 422 channel_live_unavailable, before the person is sent anywhere, when the network lacks a setting every call needs', async () => {
      network.unavailableReason = 'a developer token is missing';
      expect(await start()).toMatchObject({ ok: false, error: { code: 'channel_live_unavailable', param: 'channel' } });
      expect(network.calls.authorizationUrl).toBe(0);
      expect((await h.store.views.find({}, {})).items).toEqual([]);
    });

    it('answers 422 channel_not_configured on a channel without its client id and secret', async () =>
      expect(await start({ channel: 'google_ads', providerAccountId: '1234567890' })).toMatchObject({
        ok: false,
        error: { code: 'channel_not_configured', param: 'channel' },
      }));

    it.each([
      ['http://partner.example/back', 'url_not_https'],
      ['not a url', 'url_invalid'],
    ])('refuses the redirect_uri %s with %s', async (redirectUri, code) =>
      expect(await start({ redirectUri })).toMatchObject({ ok: false, error: { code, param: 'redirect_uri' } }),
    );

    it('answers 400 redirect_uri_not_registered for a redirect_uri the account did not register, and writes nothing', async () => {
      for (const registered of [[], ['https://partner.example/elsewhere'], ['https://other.example/connected']])
        expect(await start({ registered })).toMatchObject({ ok: false, error: { code: 'redirect_uri_not_registered', param: 'redirect_uri' } });
      expect((await h.store.views.find({}, {})).items).toEqual([]);
      expect(network.calls.authorizationUrl).toBe(0);
    });

    it('takes http on localhost, for partners developing', async () =>
      expect(value(await start({ redirectUri: 'http://localhost:8080/back' }))).toMatchObject({ status: 'pending' }));

    it('answers connection_exists at once when the channel is taken by another provider account', async () => {
      network.account('act_77', META_EUR, 'token-77');
      value(await h.commands.create({ caller: live, channel: 'meta_ads', providerAccountId: 'act_77', credentials: { access_token: 'token-77' } }));
      expect(await start()).toMatchObject({ ok: false, error: { code: 'connection_exists' } });
    });
  });

  describe('the callback', () => {
    it('exchanges the code, reads the ad account, activates, and sends the browser back with connection_id and status', async () => {
      const { id, state } = await started();
      const back = location(await callback({ state, code: 'code-1' }));
      expect(back.origin + back.pathname).toBe('https://partner.example/connected');
      expect(Object.fromEntries(back.searchParams)).toEqual({ tenant: '7', connection_id: id, status: 'active' });
      expect(value(await h.queries.get({ caller: live, id }))).toMatchObject({
        status: 'active',
        currency: 'EUR',
        timezone: 'Europe/Berlin',
        expires_at: '2027-01-01T00:00:00.000Z',
      });
      expect(await h.vault.read(id)).toMatchObject({ accessToken: 'oauth-access', refreshToken: 'oauth-refresh' });
      expect((await h.events.readStream(`connection-${id}`)).map((e) => e.type)).toEqual(['ConnectionRequested', 'ConnectionActivated']);
    });

    it('refreshes a token the network hands out within minutes of its end before the live check, and keeps the refreshed one', async () => {
      network.code('code-short', { accessToken: 'short-lived', refreshToken: 'oauth-refresh', expiresAt: new Date(Date.now() + 60_000).toISOString() }, [
        'act_42',
      ]);
      const { id, state } = await started();
      expect(location(await callback({ state, code: 'code-short' })).searchParams.get('status')).toBe('active');
      expect(network.calls).toMatchObject({ refresh: 1, readAccount: 1 });
      expect(await h.vault.read(id)).toMatchObject({ accessToken: 'refreshed-access-1', refreshToken: 'oauth-refresh' });
    });

    it('sends the browser back with error=credentials_invalid when that refresh is refused, and nothing is active', async () => {
      network.code('code-short', { accessToken: 'short-lived', refreshToken: 'dead-refresh', expiresAt: new Date(Date.now() - 60_000).toISOString() }, [
        'act_42',
      ]);
      network.refuseRefresh('dead-refresh');
      const { id, state } = await started();
      expect(location(await callback({ state, code: 'code-short' })).searchParams.get('error')).toBe('credentials_invalid');
      expect(value(await h.queries.get({ caller: live, id }))).toMatchObject({ status: 'pending' });
      expect(await h.vault.read(id)).toBeNull();
    });

    it("uses PKCE where the network takes it: the consent gets the S256 challenge of a verifier derived from the state with the service's key, the exchange that verifier", async () => {
      network.pkce = true;
      const consent = jest.spyOn(network, 'authorizationUrl');
      const exchange = jest.spyOn(network, 'exchangeCode');
      const { state } = await started();
      const challenge = consent.mock.calls[0][0].codeChallenge;
      expect(challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(location(await callback({ state, code: 'code-1' })).searchParams.get('status')).toBe('active');
      const verifier = exchange.mock.calls[0][0].codeVerifier!;
      expect(createHash('sha256').update(verifier).digest('base64url')).toBe(challenge);
      // Not to be had from the state alone: another key gives another verifier.
      expect(pkceFor(state, 'ab'.repeat(32)).verifier).not.toBe(verifier);
      network.pkce = false;
    });

    it('sends no challenge to a network without PKCE', async () => {
      const consent = jest.spyOn(network, 'authorizationUrl');
      await started();
      expect(consent.mock.calls[0][0].codeChallenge).toBeUndefined();
    });

    it('takes a state once: used again, the browser goes back with error=state_invalid', async () => {
      const { id, state } = await started();
      value(await callback({ state, code: 'code-1' }));
      const again = location(await callback({ state, code: 'code-1' }));
      expect(again.searchParams.get('error')).toBe('state_invalid');
      expect(again.searchParams.get('connection_id')).toBeNull();
      expect(network.calls.exchangeCode).toBe(1);
      expect((await h.events.readStream(`connection-${id}`)).map((e) => e.type)).toEqual(['ConnectionRequested', 'ConnectionActivated']);
    });

    it('lets only one of two simultaneous callbacks with the same state exchange the code', async () => {
      const { state } = await started();
      const [first, second] = await Promise.all([callback({ state, code: 'code-1' }), callback({ state, code: 'code-1' })]);
      expect([location(first).searchParams.get('status'), location(second).searchParams.get('error')]).toEqual(['active', 'state_invalid']);
      expect(network.calls.exchangeCode).toBe(1);
    });

    it('answers 400 state_invalid for a state it never issued, or none, in the envelope', async () => {
      await started();
      for (const state of ['made-up', undefined])
        expect(await callback({ state, code: 'code-1' })).toMatchObject({ ok: false, error: { code: 'state_invalid', param: 'state' } });
      expect(network.calls.exchangeCode).toBe(0);
    });

    it('answers 400 state_invalid for a state past its 15 minutes', async () => {
      const { state } = await started();
      jest.useFakeTimers({ now: Date.now() + 15 * 60_000 + 1, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'setTimeout', 'clearTimeout'] });
      expect(await callback({ state, code: 'code-1' })).toMatchObject({ ok: false, error: { code: 'state_invalid' } });
      expect(network.calls.exchangeCode).toBe(0);
    });

    it('sends the browser back for a spent state only for 24 hours past its expiry, then answers 400 state_invalid like a state never issued', async () => {
      const { state } = await started();
      value(await callback({ state, code: 'code-1' }));
      const { expires_at } = (await h.store.oauthStates.get(createHash('sha256').update(state).digest('hex')))!;
      const at = (ms: number) =>
        jest.useFakeTimers({ now: Date.parse(expires_at) + ms, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'setTimeout', 'clearTimeout'] });
      at(SPENT_STATE_WINDOW_MS - 1);
      expect(location(await callback({ state, code: 'code-1' })).searchParams.get('error')).toBe('state_invalid');
      at(SPENT_STATE_WINDOW_MS);
      expect(await callback({ state, code: 'code-1' })).toMatchObject({ ok: false, error: { code: 'state_invalid', param: 'state' } });
      expect(SPENT_STATE_WINDOW_MS).toBe(24 * 60 * 60_000);
    });

    it('sends the browser back with error=access_denied when the person declined, and the connection stays pending', async () => {
      const { id, state } = await started();
      expect(location(await callback({ state, error: 'access_denied' })).searchParams.get('error')).toBe('access_denied');
      expect(location(await callback({ state })).searchParams.get('error')).toBe('access_denied');
      expect(value(await h.queries.get({ caller: live, id })).status).toBe('pending');
    });

    it('sends the browser back with error=credentials_invalid for a code the network refuses', async () => {
      const { id, state } = await started();
      expect(location(await callback({ state, code: 'forged' })).searchParams.get('error')).toBe('credentials_invalid');
      expect(value(await h.queries.get({ caller: live, id })).status).toBe('pending');
    });

    it('sends the browser back with error=provider_account_unreachable when the token does not reach the ad account', async () => {
      network.code('code-2', { accessToken: 'elsewhere', refreshToken: null, expiresAt: null }, ['act_other']);
      const { state } = await started();
      expect(location(await callback({ state, code: 'code-2' })).searchParams.get('error')).toBe('provider_account_unreachable');
    });

    it('sends the browser back with error=provider_unavailable when the network does not answer', async () => {
      const { state } = await started();
      network.down = true;
      expect(location(await callback({ state, code: 'code-1' })).searchParams.get('error')).toBe('provider_unavailable');
    });

    it('sends the browser back with error=state_invalid for the round of a connection deleted meanwhile', async () => {
      const { id, state } = await started();
      value(await h.commands.remove({ caller: live, id }));
      expect(location(await callback({ state, code: 'code-1' })).searchParams.get('error')).toBe('state_invalid');
    });

    it('destroys the tokens and sends the browser back with error=state_invalid when the connection is deleted during the code exchange', async () => {
      const { id, state } = await started();
      const exchange = network.exchangeCode.bind(network);
      jest.spyOn(network, 'exchangeCode').mockImplementationOnce(async (request) => {
        // The partner deletes the pending connection while the network is still answering.
        value(await h.commands.remove({ caller: live, id }));
        return exchange(request);
      });
      expect(location(await callback({ state, code: 'code-1' })).searchParams.get('error')).toBe('state_invalid');
      expect(await h.vault.read(id)).toBeNull();
      expect(value(await h.queries.get({ caller: live, id })).status).toBe('revoked');
      expect((await h.events.readStream(`connection-${id}`)).map((e) => e.type)).toEqual(['ConnectionRequested', 'ConnectionRevoked']);
    });

    it('keeps no tokens, and sends the browser back with error=state_invalid, when the state runs out during the code exchange', async () => {
      const { id, state } = await started();
      jest.useFakeTimers({ now: Date.now() + 15 * 60_000 - 1_000, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'setTimeout', 'clearTimeout'] });
      const exchange = network.exchangeCode.bind(network);
      jest.spyOn(network, 'exchangeCode').mockImplementationOnce(async (request) => {
        jest.setSystemTime(Date.now() + 2_000);
        return exchange(request);
      });
      expect(location(await callback({ state, code: 'code-1' })).searchParams.get('error')).toBe('state_invalid');
      expect(await h.vault.read(id)).toBeNull();
      expect(value(await h.queries.get({ caller: live, id })).status).toBe('pending');
    });

    it('replaces an active connection to the same provider account when the round completes', async () => {
      network.account('act_42', META_EUR, 'token-42');
      const old = value(await h.commands.create({ caller: live, channel: 'meta_ads', providerAccountId: 'act_42', credentials: { access_token: 'token-42' } }));
      const { id, state } = await started();
      expect(value(await h.queries.get({ caller: live, id: old.id })).status).toBe('active');
      value(await callback({ state, code: 'code-1' }));
      expect([value(await h.queries.get({ caller: live, id: old.id })).status, value(await h.queries.get({ caller: live, id })).status]).toEqual([
        'revoked',
        'active',
      ]);
    });
  });

  describe('sweeping state records', () => {
    const hashOf = (state: string) => createHash('sha256').update(state).digest('hex');

    it('deletes the records past the 24 hours after their expiry, used or not, a bounded number per sweep, through the expires_at index', async () => {
      // Over a store that refuses what no declared index serves, as MongoDB with notablescan would.
      const rounds = new OAuthRounds(
        new ConnectionStore(h.events, indexedOnly(h.reads)),
        h.vault,
        h.slots,
        { meta_ads: network },
        { meta_ads: settingsFor('meta_ads', true) },
        h.settings,
      );
      const used = await started();
      const others = [await started('act_43'), await started('act_44')];
      value(await callback({ state: used.state, code: 'code-1' }));
      const expiries = await Promise.all([used, ...others].map(async ({ state }) => Date.parse((await h.store.oauthStates.get(hashOf(state)))!.expires_at)));

      expect(await rounds.sweepStates(new Date(Math.min(...expiries) + SPENT_STATE_WINDOW_MS))).toBe(0);
      expect(await rounds.sweepStates(new Date(Math.max(...expiries) + SPENT_STATE_WINDOW_MS + 1), 2)).toBe(2);
      expect(await rounds.sweepStates(new Date(Math.max(...expiries) + SPENT_STATE_WINDOW_MS + 1), 2)).toBe(1);
      for (const { state } of [used, ...others]) expect(await h.store.oauthStates.get(hashOf(state))).toBeNull();
    });

    it('keeps a record whose window is still open beside one whose window has closed', async () => {
      const old = await started();
      const oldExpiry = Date.parse((await h.store.oauthStates.get(hashOf(old.state)))!.expires_at);
      jest.useFakeTimers({ now: oldExpiry + 60 * 60_000, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'setTimeout', 'clearTimeout'] });
      const recent = await started('act_43');
      jest.useRealTimers();
      expect(await h.rounds.sweepStates(new Date(oldExpiry + SPENT_STATE_WINDOW_MS + 1))).toBe(1);
      expect([await h.store.oauthStates.get(hashOf(old.state)), await h.store.oauthStates.get(hashOf(recent.state))]).toEqual([
        null,
        expect.objectContaining({ connection_id: recent.id }),
      ]);
    });
  });

  describe('reauthorization through a new round', () => {
    it('keeps the connection as it is until the callback, then makes it active again with the new tokens', async () => {
      const { id, state } = await started();
      value(await callback({ state, code: 'code-1' }));
      await h.access.reauthRequired({ accountId: 'acct_1', mode: 'live', connectionId: id, channel: 'meta_ads', reason: 'refresh_refused' });
      const round = value(
        await h.commands.reauthorize({ caller: live, id, redirectUri: 'https://partner.example/again', oauthRedirectUris: ['https://partner.example/again'] }),
      ) as { status: string; authorization_url: string };
      expect(round.status).toBe('reauth_required');
      network.code('code-3', { accessToken: 'second-access', refreshToken: 'second-refresh', expiresAt: null }, ['act_42']);
      const back = location(await callback({ state: new URL(round.authorization_url).searchParams.get('state')!, code: 'code-3' }));
      expect([back.origin + back.pathname, back.searchParams.get('status')]).toEqual(['https://partner.example/again', 'active']);
      expect(value(await h.queries.get({ caller: live, id }))).toMatchObject({ status: 'active', reauth_reason: null });
      expect(await h.vault.read(id)).toMatchObject({ accessToken: 'second-access' });
      // the first round's state stays spent
      expect(location(await callback({ state, code: 'code-3' })).searchParams.get('error')).toBe('state_invalid');
    });
  });

  describe('a network whose consent starts with a call', () => {
    let x: ConsentByCallNetwork;
    beforeEach(async () => {
      await h.close();
      x = new ConsentByCallNetwork('x_ads').account('18ce54', { currency: 'USD', timezone: 'America/Los_Angeles' }, 'unused');
      x.code('req-1:verifier-1', { accessToken: 'x-token:x-secret', refreshToken: null, expiresAt: null }, ['18ce54']);
      h = connectionsHarness({ x_ads: x }, { x_ads: settingsFor('x_ads', true) });
    });

    it('asks the network for the consent page, and reads its own callback parameters into the code', async () => {
      const round = value(
        await h.commands.create({ caller: live, channel: 'x_ads', providerAccountId: '18ce54', redirectUri: BACK, oauthRedirectUris: REGISTERED }),
      ) as { id: string; authorization_url: string };
      expect(round.authorization_url).toBe('https://consent.x.example/oauth/authorize?oauth_token=req-1');
      expect(x.started[0].redirectUri).toBe(CALLBACK);
      const state = x.started[0].state;
      const back = location(await h.rounds.complete({ requestId: 'req_cb', state, query: { state, oauth_token: 'req-1', oauth_verifier: 'verifier-1' } }));
      expect(back.searchParams.get('status')).toBe('active');
      expect(await h.vault.read(round.id)).toMatchObject({ accessToken: 'x-token:x-secret' });
    });

    it("refuses another round's consent on this round's state (the request token is bound to its round): error=state_invalid, nothing exchanged", async () => {
      x.code('req-2:verifier-2', { accessToken: 'x-other:x-secret', refreshToken: null, expiresAt: null }, ['18ce54']);
      const mine = value(
        await h.commands.create({ caller: live, channel: 'x_ads', providerAccountId: '18ce54', redirectUri: BACK, oauthRedirectUris: REGISTERED }),
      ) as { id: string };
      const state = x.started[0].state;
      // req-2 is a round started elsewhere (another account's consent link, say).
      const back = location(await h.rounds.complete({ requestId: 'req_cb', state, query: { state, oauth_token: 'req-2', oauth_verifier: 'verifier-2' } }));
      expect(back.searchParams.get('error')).toBe('state_invalid');
      expect(x.calls.exchangeCode).toBe(0);
      expect(value(await h.queries.get({ caller: live, id: mine.id }))).toMatchObject({ status: 'pending' });
    });

    it('sends the browser back with access_denied when the network says the person refused', async () => {
      value(await h.commands.create({ caller: live, channel: 'x_ads', providerAccountId: '18ce54', redirectUri: BACK, oauthRedirectUris: REGISTERED }));
      const state = x.started[0].state;
      expect(location(await h.rounds.complete({ requestId: 'req_cb', state, query: { state, denied: 'req-1' } })).searchParams.get('error')).toBe(
        'access_denied',
      );
      expect(x.calls.exchangeCode).toBe(0);
    });

    it("answers channel_not_configured when the network refuses the service's client, provider_unavailable when it does not answer", async () => {
      x.refuseClient = true;
      expect(
        await h.commands.create({ caller: live, channel: 'x_ads', providerAccountId: '18ce54', redirectUri: BACK, oauthRedirectUris: REGISTERED }),
      ).toMatchObject({ ok: false, error: { code: 'channel_not_configured' } });
      x.refuseClient = false;
      jest.spyOn(x, 'startConsent').mockRejectedValueOnce(new ProviderError('transient', 'over capacity', '130', 503));
      expect(
        await h.commands.create({ caller: live, channel: 'x_ads', providerAccountId: '18ce54', redirectUri: BACK, oauthRedirectUris: REGISTERED }),
      ).toMatchObject({ ok: false, error: { code: 'provider_unavailable' } });
      expect(await h.store.views.count({})).toBe(0);
    });
  });

  describe('with a test key', () => {
    it('simulates the consent: the authorization_url is the callback itself, which activates a sandbox connection', async () => {
      const round = value(
        await h.commands.create({
          caller: test,
          channel: 'tiktok_ads',
          providerAccountId: 'adv_1',
          redirectUri: BACK,
          oauthRedirectUris: REGISTERED,
          sandbox: { currency: 'EUR' },
        }),
      ) as { id: string; status: string; authorization_url: string };
      expect(round.status).toBe('pending');
      const consent = new URL(round.authorization_url);
      expect(consent.origin + consent.pathname).toBe(CALLBACK);
      const back = location(await callback({ state: consent.searchParams.get('state')!, code: consent.searchParams.get('code')! }));
      expect(back.searchParams.get('status')).toBe('active');
      expect(value(await h.queries.get({ caller: test, id: round.id }))).toMatchObject({
        status: 'active',
        environment: 'sandbox',
        currency: 'EUR',
        timezone: 'UTC',
      });
      expect(network.calls.exchangeCode).toBe(0);
    });

    it('answers two replicas taking the same state at once with one activation and one error=state_invalid, never a failure', async () => {
      const round = value(
        await h.commands.create({ caller: test, channel: 'tiktok_ads', providerAccountId: 'adv_1', redirectUri: BACK, oauthRedirectUris: REGISTERED }),
      ) as { id: string; authorization_url: string };
      const consent = new URL(round.authorization_url);
      const query = { requestId: 'req_cb', state: consent.searchParams.get('state')!, code: consent.searchParams.get('code')! };
      const answers = await Promise.all([h.rounds.complete(query), h.replica().rounds.complete(query)]);
      const said = answers.map((answer) => location(answer).searchParams).map((back) => back.get('status') ?? back.get('error'));
      expect(said.sort()).toEqual(['active', 'state_invalid']);
      expect((await h.events.readStream(`connection-${round.id}`)).map((e) => e.type)).toEqual(['ConnectionRequested', 'ConnectionActivated']);
    });
  });
});
