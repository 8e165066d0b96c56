import { Logger } from '@nestjs/common';
import { callerOf, connectionsHarness, ConnectionsHarness, InMemoryNetwork, settingsFor } from '@campaign-ops/testing/connections';
import { ConnectionResource } from '@campaign-ops/connection-domain';
import { Outcome } from '@campaign-ops/api-errors';
import { CreateConnectionRequest } from '@campaign-ops/service-messages';
import { REVOKE_TIMEOUT_MS } from './connection-commands';

const live = callerOf('acct_1', 'live');
const test = callerOf('acct_1', 'test');
const stranger = callerOf('acct_2', 'live');
const META_EUR = { currency: 'EUR', timezone: 'Europe/Berlin' };

describe('connections: token import, the one-active rule, reads and deletes', () => {
  let network: InMemoryNetwork;
  let h: ConnectionsHarness;
  const value = <T>(outcome: Outcome<T>): T => {
    if (!outcome.ok) throw new Error(`expected success, got ${JSON.stringify(outcome.error)}`);
    return outcome.value;
  };
  const importToken = (overrides: Partial<CreateConnectionRequest> = {}) =>
    h.commands.create({
      caller: live,
      channel: 'meta_ads',
      providerAccountId: 'act_42',
      credentials: { access_token: 'token-42', refresh_token: 'refresh-42', expires_at: '2027-01-01T00:00:00Z' },
      ...overrides,
    });
  const allEvents = async () => {
    const seen: unknown[] = [];
    for (const view of (await h.store.views.find({}, { limit: 1000 })).items) seen.push(...(await h.events.readStream(`connection-${view.id}`)));
    return seen;
  };

  beforeEach(() => {
    network = new InMemoryNetwork('meta_ads')
      .account('act_42', META_EUR, 'token-42')
      .account('act_77', { currency: 'USD', timezone: 'America/New_York' }, 'token-77');
    h = connectionsHarness({ meta_ads: network }, { meta_ads: settingsFor('meta_ads', true), google_ads: settingsFor('google_ads', false) });
  });
  afterEach(() => h.close());

  describe('with a live key', () => {
    it("activates at once, with the ad account's currency and time zone read with the token", async () => {
      const created = value(await importToken());
      expect(created).toEqual({
        id: expect.stringMatching(/^con_[0-9A-Z]{26}$/),
        channel: 'meta_ads',
        status: 'active',
        provider_account_id: 'act_42',
        environment: 'live',
        scopes: [],
        currency: 'EUR',
        timezone: 'Europe/Berlin',
        expires_at: '2027-01-01T00:00:00.000Z',
        reauth_reason: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(network.calls.readAccount).toBe(1);
      expect(value(await h.queries.get({ caller: live, id: created.id }))).toEqual(created);
      expect(await h.vault.read(created.id)).toMatchObject({ accessToken: 'token-42', refreshToken: 'refresh-42' });
    });

    it('keeps its tokens out of events, views and answers', async () => {
      const created = value(await importToken());
      const seen = JSON.stringify({ created, events: await allEvents(), views: await h.store.views.find({}, { limit: 100 }) });
      expect(seen).not.toMatch(/token-42|refresh-42/);
    });

    it('answers 400 credentials_invalid for a token the network refuses, and makes nothing', async () => {
      expect(await importToken({ credentials: { access_token: 'forged' } })).toEqual({
        ok: false,
        error: { code: 'credentials_invalid', message: 'meta_ads refused the access token.', param: 'credentials.access_token' },
      });
      expect((await h.store.views.find({}, {})).items).toEqual([]);
    });

    describe('an access token already past its expiry (migrated from another system)', () => {
      const expired = { access_token: 'token-42', refresh_token: 'refresh-42', expires_at: '2026-01-01T00:00:00Z' };

      it('is refreshed with its refresh token before the live check, and the new tokens are kept', async () => {
        const created = value(await importToken({ credentials: expired }));
        expect(created).toMatchObject({ status: 'active', currency: 'EUR' });
        expect(network.calls).toMatchObject({ refresh: 1, readAccount: 1 });
        const kept = await h.vault.read(created.id);
        expect(kept).toMatchObject({ accessToken: 'refreshed-access-1', refreshToken: 'refresh-42' });
        expect(Date.parse(created.expires_at!)).toBeGreaterThan(Date.now());
      });

      it('is refreshed too when it expires within the refresh margin', async () => {
        value(await importToken({ credentials: { ...expired, expires_at: new Date(Date.now() + 60_000).toISOString() } }));
        expect(network.calls.refresh).toBe(1);
      });

      it('answers 400 credentials_invalid when its refresh token is refused, and makes nothing', async () => {
        network.refuseRefresh('refresh-42');
        expect(await importToken({ credentials: expired })).toMatchObject({
          ok: false,
          error: { code: 'credentials_invalid', param: 'credentials.refresh_token' },
        });
        expect(network.calls.readAccount).toBe(0);
        expect((await h.store.views.find({}, {})).items).toEqual([]);
      });

      it('answers provider_unavailable when the network does not answer the refresh', async () => {
        network.down = true;
        expect(await importToken({ credentials: expired })).toMatchObject({ ok: false, error: { code: 'provider_unavailable' } });
      });

      it('is checked as it came when there is no refresh token (the network then refuses or takes it)', async () => {
        value(await importToken({ credentials: { access_token: 'token-42', expires_at: '2026-01-01T00:00:00Z' } }));
        expect(network.calls).toMatchObject({ refresh: 0, readAccount: 1 });
      });
    });

    it('answers provider_account_unreachable for an ad account the token cannot reach', async () =>
      expect(await importToken({ providerAccountId: 'act_77' })).toMatchObject({
        ok: false,
        error: { code: 'provider_account_unreachable', param: 'provider_account_id' },
      }));

    it('answers provider_unavailable when the network does not answer', async () => {
      network.down = true;
      expect(await importToken()).toMatchObject({ ok: false, error: { code: 'provider_unavailable' } });
    });

    it('answers channel_live_unavailable, before any call, when the network lacks a setting every call needs', async () => {
      network.unavailableReason = 'Meta needs X on every call: CHANNEL_META_ADS_X is not set';
      expect(await importToken()).toEqual({
        ok: false,
        error: {
          code: 'channel_live_unavailable',
          message: 'Live connections to meta_ads cannot be made on this service: Meta needs X on every call: CHANNEL_META_ADS_X is not set.',
          param: 'channel',
        },
      });
      expect(network.calls).toMatchObject({ refresh: 0, readAccount: 0 });
      expect((await h.store.views.find({}, {})).items).toEqual([]);
    });

    it('answers channel_live_unavailable for a channel without a live adapter', async () =>
      expect(await importToken({ channel: 'tiktok_ads' })).toMatchObject({ ok: false, error: { code: 'channel_live_unavailable', param: 'channel' } }));

    it('wants exactly one of credentials and redirect_uri, and no sandbox settings', async () => {
      expect(await importToken({ credentials: undefined })).toMatchObject({ ok: false, error: { code: 'parameter_missing', param: 'credentials' } });
      expect(await importToken({ redirectUri: 'https://partner.example/back' })).toMatchObject({
        ok: false,
        error: { code: 'parameter_invalid', param: 'redirect_uri' },
      });
      expect(await importToken({ sandbox: { currency: 'EUR' } })).toMatchObject({ ok: false, error: { code: 'parameter_invalid', param: 'sandbox' } });
    });
  });

  describe('with a test key', () => {
    it('makes a sandbox connection without credentials: USD and UTC, no network call, no tokens kept', async () => {
      const created = value(await h.commands.create({ caller: test, channel: 'tiktok_ads', providerAccountId: 'adv_1' }));
      expect(created).toMatchObject({ status: 'active', environment: 'sandbox', currency: 'USD', timezone: 'UTC', channel: 'tiktok_ads' });
      expect(network.calls.readAccount).toBe(0);
      expect(await h.vault.read(created.id)).toBeNull();
    });

    it('takes the simulated account from `sandbox`, and credentials without checking them', async () => {
      const created = value(
        await h.commands.create({
          caller: test,
          channel: 'meta_ads',
          providerAccountId: 'act_1',
          credentials: { access_token: 'anything' },
          sandbox: { currency: 'EUR', timezone: 'Europe/Paris' },
        }),
      );
      expect(created).toMatchObject({ currency: 'EUR', timezone: 'Europe/Paris' });
      expect(await h.vault.read(created.id)).toBeNull();
    });
  });

  describe('one active connection per account, mode and channel', () => {
    it('replaces the connection to the same provider account: the old one is revoked and its tokens destroyed', async () => {
      const first = value(await importToken());
      const second = value(await importToken());
      expect(second.id).not.toBe(first.id);
      expect(value(await h.queries.get({ caller: live, id: first.id })).status).toBe('revoked');
      expect(value(await h.queries.get({ caller: live, id: second.id })).status).toBe('active');
      expect(await h.vault.read(first.id)).toBeNull();
      expect((await h.events.readStream(`connection-${first.id}`)).map((e) => [e.type, e.data.reason])).toEqual([
        ['ConnectionActivated', undefined],
        ['ConnectionRevoked', 'replaced'],
      ]);
    });

    it('refuses another provider account with 409 connection_exists, also while the first needs reauthorization', async () => {
      const first = value(await importToken());
      const other = () => importToken({ providerAccountId: 'act_77', credentials: { access_token: 'token-77' } });
      expect(await other()).toMatchObject({ ok: false, error: { code: 'connection_exists', param: 'provider_account_id' } });
      await h.access.reauthRequired({ accountId: 'acct_1', mode: 'live', connectionId: first.id, channel: 'meta_ads', reason: 'token_refused' });
      expect(await other()).toMatchObject({ ok: false, error: { code: 'connection_exists' } });
      expect(network.calls.readAccount).toBe(1);
      value(await h.commands.remove({ caller: live, id: first.id }));
      expect(value(await other())).toMatchObject({ status: 'active', provider_account_id: 'act_77' });
    });

    it('holds per channel, per mode and per account', async () => {
      value(await importToken());
      value(await h.commands.create({ caller: test, channel: 'meta_ads', providerAccountId: 'act_77' }));
      value(await h.commands.create({ caller: callerOf('acct_2', 'test'), channel: 'meta_ads', providerAccountId: 'act_99' }));
      value(await h.commands.create({ caller: test, channel: 'google_ads', providerAccountId: '123-456-7890' }));
      expect(await h.store.views.count({ status: 'active' })).toBe(4);
    });

    it('lets only one of two simultaneous imports to different accounts in', async () => {
      const answers = await Promise.all([importToken(), importToken({ providerAccountId: 'act_77', credentials: { access_token: 'token-77' } })]);
      expect(answers.map((a) => (a.ok ? 'active' : a.error.code)).sort()).toEqual(['active', 'connection_exists']);
    });

    it('lets only one in when the two imports reach two replicas', async () => {
      const other = h.replica();
      const answers = await Promise.all([
        importToken(),
        other.commands.create({ caller: live, channel: 'meta_ads', providerAccountId: 'act_77', credentials: { access_token: 'token-77' } }),
      ]);
      expect(answers.map((a) => (a.ok ? 'active' : a.error.code)).sort()).toEqual(['active', 'connection_exists']);
      expect(await h.store.views.count({ account_id: 'acct_1', mode: 'live', channel: 'meta_ads', status: 'active' })).toBe(1);
    });
  });

  describe('reads, scoped to account and mode', () => {
    it("answers another account's or mode's connection as one that does not exist", async () => {
      const created = value(await importToken());
      const missing = { ok: false, error: { code: 'resource_missing', message: `No such connection: ${created.id}`, param: 'id' } };
      for (const caller of [stranger, test]) {
        expect(await h.queries.get({ caller, id: created.id })).toEqual(missing);
        expect(await h.commands.remove({ caller, id: created.id })).toEqual(missing);
        expect(await h.commands.reauthorize({ caller, id: created.id, credentials: { access_token: 'token-42' } })).toEqual(missing);
        expect(value(await h.queries.list({ caller, query: { limit: 20 } })).data).toEqual([]);
      }
      expect(value(await h.queries.get({ caller: live, id: created.id })).status).toBe('active');
      expect(await h.queries.get({ caller: live, id: 'con_nothing' })).toMatchObject({ ok: false, error: { code: 'resource_missing' } });
    });

    it('lists newest first, filters by channel and status, and pages with starting_after', async () => {
      const made: ConnectionResource[] = [];
      for (const channel of ['meta_ads', 'google_ads', 'tiktok_ads'] as const)
        made.push(value(await h.commands.create({ caller: test, channel, providerAccountId: `acc_${channel}` })));
      value(await h.commands.remove({ caller: test, id: made[1].id }));
      const first = value(await h.queries.list({ caller: test, query: { limit: 2 } }));
      expect([first.data.map((c) => c.id), first.hasMore]).toEqual([[made[2].id, made[1].id], true]);
      const second = value(await h.queries.list({ caller: test, query: { limit: 2, startingAfter: made[1].id } }));
      expect([second.data.map((c) => c.id), second.hasMore]).toEqual([[made[0].id], false]);
      expect(value(await h.queries.list({ caller: test, query: { limit: 20, channel: 'google_ads' } })).data.map((c) => c.id)).toEqual([made[1].id]);
      expect(value(await h.queries.list({ caller: test, query: { limit: 20, status: 'active' } })).data.map((c) => c.id)).toEqual([made[2].id, made[0].id]);
    });

    it('resolves the connection a dispatch would use: active first, then one that needs reauthorization, then pending', async () => {
      expect(await h.queries.resolve({ accountId: 'acct_1', mode: 'live', channel: 'meta_ads' })).toEqual({ connection: null });
      const first = value(await importToken());
      await h.access.reauthRequired({ accountId: 'acct_1', mode: 'live', connectionId: first.id, channel: 'meta_ads', reason: 'x' });
      expect(await h.queries.resolve({ accountId: 'acct_1', mode: 'live', channel: 'meta_ads' })).toEqual({
        connection: { id: first.id, status: 'reauth_required' },
      });
      const replacement = value(await importToken());
      expect(await h.queries.resolve({ accountId: 'acct_1', mode: 'live', channel: 'meta_ads' })).toEqual({
        connection: { id: replacement.id, status: 'active' },
      });
      expect(await h.queries.resolve({ accountId: 'acct_1', mode: 'test', channel: 'meta_ads' })).toEqual({ connection: null });
    });
  });

  describe('delete', () => {
    it('revokes and destroys the tokens; deleting again answers the same', async () => {
      const created = value(await importToken());
      const deleted = value(await h.commands.remove({ caller: live, id: created.id }));
      expect(deleted).toMatchObject({ id: created.id, status: 'revoked' });
      expect(await h.vault.read(created.id)).toBeNull();
      expect(value(await h.commands.remove({ caller: live, id: created.id }))).toEqual(deleted);
      expect((await h.events.readStream(`connection-${created.id}`)).map((e) => e.type)).toEqual(['ConnectionActivated', 'ConnectionRevoked']);
    });

    it('revokes the grant at the network once (a live connection), before destroying the tokens here', async () => {
      const created = value(await importToken());
      let whenRevoked: unknown = 'not called';
      const revoke = jest.spyOn(network, 'revokeTokens').mockImplementation(async () => {
        whenRevoked = { tokens: await h.vault.read(created.id), status: (await h.store.load(created.id))?.status };
      });
      value(await h.commands.remove({ caller: live, id: created.id }));
      expect(revoke.mock.calls).toEqual([[{ accessToken: 'token-42', refreshToken: 'refresh-42' }]]);
      expect(whenRevoked).toEqual({ tokens: expect.objectContaining({ accessToken: 'token-42', refreshToken: 'refresh-42' }), status: 'active' });
      expect(await h.vault.read(created.id)).toBeNull();
      value(await h.commands.remove({ caller: live, id: created.id }));
      expect(revoke).toHaveBeenCalledTimes(1);
    });

    it(`does not wait past REVOKE_TIMEOUT_MS for a network that does not answer: logged, the delete answers as before`, async () => {
      const created = value(await importToken());
      network.revokeDelayMs = 60_000;
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
      try {
        const removing = h.commands.remove({ caller: live, id: created.id });
        while (network.calls.revokeTokens === 0) await new Promise((next) => setImmediate(next));
        await jest.advanceTimersByTimeAsync(REVOKE_TIMEOUT_MS);
        expect(value(await removing)).toMatchObject({ id: created.id, status: 'revoked' });
      } finally {
        jest.useRealTimers();
      }
      expect(await h.vault.read(created.id)).toBeNull();
      expect(String(warn.mock.calls[0]?.[0])).toMatch(
        new RegExp(`${created.id}: meta_ads did not revoke the grant \\(.*no answer within ${REVOKE_TIMEOUT_MS} ms\\)`),
      );
      warn.mockRestore();
    });

    it('deletes all the same when the network refuses or is down, logging why without the tokens', async () => {
      const created = value(await importToken());
      network.down = true;
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      expect(value(await h.commands.remove({ caller: live, id: created.id }))).toMatchObject({ status: 'revoked' });
      expect(await h.vault.read(created.id)).toBeNull();
      expect(network.calls.revokeTokens).toBe(1);
      expect(String(warn.mock.calls[0]?.[0])).toMatch(new RegExp(`${created.id}: meta_ads did not revoke the grant .*destroyed here all the same`));
      expect(JSON.stringify(warn.mock.calls)).not.toMatch(/token-42|refresh-42/);
      warn.mockRestore();
    });

    it('calls no network for a test connection', async () => {
      const created = value(await importToken({ caller: test }));
      value(await h.commands.remove({ caller: test, id: created.id }));
      expect(network.calls.revokeTokens).toBe(0);
    });
  });

  describe('reauthorize with credentials', () => {
    it('makes a connection that needs reauthorization active again, with the new tokens', async () => {
      const created = value(await importToken());
      await h.access.reauthRequired({ accountId: 'acct_1', mode: 'live', connectionId: created.id, channel: 'meta_ads', reason: 'refresh_refused' });
      expect(value(await h.queries.get({ caller: live, id: created.id }))).toMatchObject({ status: 'reauth_required', reauth_reason: 'refresh_refused' });
      network.account('act_42', META_EUR, 'token-42-new');
      const again = value(await h.commands.reauthorize({ caller: live, id: created.id, credentials: { access_token: 'token-42-new' } }));
      expect(again).toMatchObject({ id: created.id, status: 'active', reauth_reason: null, expires_at: null });
      expect(await h.vault.read(created.id)).toMatchObject({ accessToken: 'token-42-new', refreshToken: null });
    });

    it('answers channel_live_unavailable, before any call, when the network lacks a setting every call needs', async () => {
      const created = value(await importToken());
      network.unavailableReason = 'a setting is missing';
      expect(await h.commands.reauthorize({ caller: live, id: created.id, credentials: { access_token: 'token-42' } })).toMatchObject({
        ok: false,
        error: { code: 'channel_live_unavailable', param: 'channel' },
      });
      expect(network.calls.readAccount).toBe(1);
    });

    it('checks the new token like an import', async () => {
      const created = value(await importToken());
      expect(await h.commands.reauthorize({ caller: live, id: created.id, credentials: { access_token: 'forged' } })).toMatchObject({
        ok: false,
        error: { code: 'credentials_invalid' },
      });
      expect(await h.commands.reauthorize({ caller: live, id: created.id })).toMatchObject({
        ok: false,
        error: { code: 'parameter_missing', param: 'credentials' },
      });
    });

    it('reauthorizes a sandbox connection without credentials, keeping its simulated account', async () => {
      const created = value(
        await h.commands.create({ caller: test, channel: 'meta_ads', providerAccountId: 'act_1', sandbox: { currency: 'GBP', timezone: 'Europe/London' } }),
      );
      await h.access.reauthRequired({ accountId: 'acct_1', mode: 'test', connectionId: null, channel: 'meta_ads', reason: 'sandbox_reauth' });
      expect(value(await h.commands.reauthorize({ caller: test, id: created.id }))).toMatchObject({
        status: 'active',
        currency: 'GBP',
        timezone: 'Europe/London',
      });
    });

    it('refuses a revoked connection', async () => {
      const created = value(await importToken());
      value(await h.commands.remove({ caller: live, id: created.id }));
      expect(await h.commands.reauthorize({ caller: live, id: created.id, credentials: { access_token: 'token-42' } })).toMatchObject({
        ok: false,
        error: { code: 'resource_missing', param: 'id' },
      });
    });
  });
});
