import { Logger } from '@nestjs/common';
import { Outcome } from '@campaign-ops/api-errors';
import { Bus } from '@campaign-ops/bus';
import { PartnerEvent, partnerEventsOnBus } from '@campaign-ops/webhook-domain';
import { callerOf, connectionsHarness, ConnectionsHarness, InMemoryNetwork, settingsFor } from '@campaign-ops/testing/connections';
import { relayConnectionEvent } from './connection-relay';

const live = callerOf('acct_1', 'live');
const META_EUR = { currency: 'EUR', timezone: 'Europe/Berlin' };
const inMinutes = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();

describe('connections: tokens for dispatch-service, refresh and reauthorization', () => {
  let network: InMemoryNetwork;
  let h: ConnectionsHarness;
  const value = <T>(outcome: Outcome<T>): T => {
    if (!outcome.ok) throw new Error(`expected success, got ${JSON.stringify(outcome.error)}`);
    return outcome.value;
  };
  /**
   * A connection whose token was imported an hour ago: `expires_at` near now was an hour away then,
   * so the import took it as it came (an import refreshes a token within 10 minutes of its end).
   */
  const connect = async (credentials: { access_token: string; refresh_token?: string; expires_at?: string }, caller = live) => {
    const realNow = Date.now;
    const anHourAgo = jest.spyOn(Date, 'now').mockImplementation(() => realNow() - 3_600_000);
    try {
      return value(await h.commands.create({ caller, channel: 'meta_ads', providerAccountId: 'act_42', credentials })).id;
    } finally {
      anHourAgo.mockRestore();
    }
  };
  const access = (connectionId: string, forceRefresh = false, replica = h) =>
    replica.access.access({ accountId: 'acct_1', mode: 'live', connectionId, forceRefresh, requestId: 'req_dispatch' });
  const types = async (id: string) => (await h.events.readStream(`connection-${id}`)).map((e) => e.type);
  const view = async (id: string) => value(await h.queries.get({ caller: live, id }));

  beforeEach(() => {
    network = new InMemoryNetwork('meta_ads').account('act_42', META_EUR, 'token-42');
    h = connectionsHarness({ meta_ads: network }, { meta_ads: settingsFor('meta_ads', true) });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await h.close();
  });

  describe('svc.connection.access', () => {
    it('answers the token on file with the ad account, without calling the network when it is not expiring', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(60) });
      expect(value(await access(id))).toEqual({
        connectionId: id,
        channel: 'meta_ads',
        providerAccountId: 'act_42',
        accessToken: 'token-42',
        tokenVersion: 1,
        currency: 'EUR',
        timezone: 'Europe/Berlin',
      });
      expect(value(await access(await connect({ access_token: 'token-42' })))).toMatchObject({ accessToken: 'token-42' });
      expect(network.calls.refresh).toBe(0);
    });

    it('refreshes a token that expires within 10 minutes first, and records it', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(9) });
      const fresh = value(await access(id));
      expect(fresh.accessToken).toBe('refreshed-access-1');
      expect(network.calls.refresh).toBe(1);
      expect(await types(id)).toEqual(['ConnectionActivated', 'TokenRefreshed']);
      expect(Date.parse((await view(id)).expires_at!)).toBeGreaterThan(Date.now() + 50 * 60_000);
      // The refresh token on file is kept when the network issues none.
      expect(await h.vault.read(id)).toMatchObject({ accessToken: 'refreshed-access-1', refreshToken: 'refresh-42' });
      expect(value(await access(id)).accessToken).toBe('refreshed-access-1');
      expect(network.calls.refresh).toBe(1);
    });

    it('fails for good, moving the connection to reauth_required, when its tokens were sealed with a key the service no longer has', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(60) });
      // The record as a key rotated away without `ops vault reseal` leaves it: under a key id nobody holds.
      await h.reads.collection<{ id: string; key_id: string }>('connection_tokens').update(id, { key_id: 'deadbeef' });
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const answer = await access(id);
      expect(answer).toMatchObject({ ok: false, error: { code: 'connection_reauth_required', message: expect.stringContaining('tokens_unreadable') } });
      expect((await view(id)).status).toBe('reauth_required');
      expect(String(logged.mock.calls[0]?.[0])).toMatch(new RegExp(`${id}.*key deadbeef.*reauth_required`));
      expect(JSON.stringify(logged.mock.calls)).not.toContain('token-42');
      expect(network.calls.refresh).toBe(0);
    });

    it('refreshes a token past its time', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(-5) });
      expect(value(await access(id)).accessToken).toBe('refreshed-access-1');
    });

    it('refreshes once for many simultaneous callers', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(1) });
      network.refreshDelayMs = 50;
      const answers = await Promise.all(Array.from({ length: 5 }, () => access(id)));
      expect(new Set(answers.map((a) => value(a).accessToken))).toEqual(new Set(['refreshed-access-1']));
      expect(network.calls.refresh).toBe(1);
      expect((await types(id)).filter((t) => t === 'TokenRefreshed')).toHaveLength(1);
    });

    it('refreshes once across replicas: the other waits for the tokens the first one got', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(1) });
      network.refreshDelayMs = 300;
      const answers = await Promise.all([access(id, false, h), access(id, false, h.replica() as ConnectionsHarness)]);
      expect(answers.map((a) => value(a).accessToken)).toEqual(['refreshed-access-1', 'refreshed-access-1']);
      expect(network.calls.refresh).toBe(1);
    });

    it('refreshes when asked to (the network refused the token), but not twice for callers asking at once', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(60) });
      const answers = await Promise.all([access(id, true), access(id, true)]);
      expect(answers.map((a) => value(a).accessToken)).toEqual(['refreshed-access-1', 'refreshed-access-1']);
      expect(network.calls.refresh).toBe(1);
    });

    it('hands out the tokens on file, refreshing nothing, when the refused token was replaced meanwhile (a reauthorization)', async () => {
      // No refresh token (Meta): a forced refresh of the refused token would need the person again.
      const id = await connect({ access_token: 'token-42' });
      const given = value(await access(id));
      network.account('act_42', META_EUR, 'token-43');
      expect((await h.commands.reauthorize({ caller: live, id, credentials: { access_token: 'token-43' } })).ok).toBe(true);
      const answer = await h.access.access({
        accountId: 'acct_1',
        mode: 'live',
        connectionId: id,
        forceRefresh: true,
        refusedVersion: given.tokenVersion,
        requestId: null,
      });
      expect(value(answer)).toMatchObject({ accessToken: 'token-43', tokenVersion: given.tokenVersion + 1 });
      expect((await view(id)).status).toBe('active');
      expect(network.calls.refresh).toBe(0);
    });

    it('refreshes (and tells the version of) a refused token that is still the one on file', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(60) });
      const given = value(await access(id));
      const answer = await h.access.access({
        accountId: 'acct_1',
        mode: 'live',
        connectionId: id,
        forceRefresh: true,
        refusedVersion: given.tokenVersion,
        requestId: null,
      });
      expect(value(answer)).toMatchObject({ accessToken: 'refreshed-access-1', tokenVersion: given.tokenVersion + 1 });
      expect(value(await access(id)).tokenVersion).toBe(given.tokenVersion + 1);
    });

    it('moves the connection to reauth_required when the refresh is refused, and answers connection_reauth_required', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'dead-refresh', expires_at: inMinutes(2) });
      network.refuseRefresh('dead-refresh');
      expect(await access(id)).toMatchObject({ ok: false, error: { code: 'connection_reauth_required', param: 'connection_id' } });
      expect(await view(id)).toMatchObject({ status: 'reauth_required', reauth_reason: 'refresh_refused' });
      expect(await access(id)).toMatchObject({ ok: false, error: { code: 'connection_reauth_required' } });
      expect(network.calls.refresh).toBe(1);
      const [, required] = await h.events.readStream(`connection-${id}`);
      expect([required.type, required.metadata.requestId]).toEqual(['ReauthRequired', 'req_dispatch']);
    });

    it('without a refresh token: hands out a token still good for minutes, needs the person once it is dead or refused', async () => {
      const soon = await connect({ access_token: 'token-42', expires_at: inMinutes(5) });
      expect(value(await access(soon)).accessToken).toBe('token-42');
      expect(await access(soon, true)).toMatchObject({ ok: false, error: { code: 'connection_reauth_required' } });
      expect((await view(soon)).reauth_reason).toBe('token_refused');
      const dead = await connect({ access_token: 'token-42', expires_at: inMinutes(-1) });
      expect(await access(dead)).toMatchObject({ ok: false, error: { code: 'connection_reauth_required' } });
      expect((await view(dead)).reauth_reason).toBe('token_expired');
      expect(network.calls.refresh).toBe(0);
    });

    it('answers provider_unavailable when the network does not answer the refresh, and the connection stays active', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(2) });
      network.down = true;
      expect(await access(id)).toMatchObject({ ok: false, error: { code: 'provider_unavailable' } });
      expect((await view(id)).status).toBe('active');
      network.down = false;
      expect(value(await access(id)).accessToken).toBe('refreshed-access-1');
    });

    it("leaves the connection as it is when the network refuses this service's OAuth client: provider_unavailable, and an error for the operator naming the channel and the code", async () => {
      const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(2) });
      network.refuseClient = true;
      expect(await access(id)).toMatchObject({ ok: false, error: { code: 'provider_unavailable' } });
      expect(await access(id, true)).toMatchObject({ ok: false, error: { code: 'provider_unavailable' } });
      expect(await view(id)).toMatchObject({ status: 'active', reauth_reason: null });
      expect(await types(id)).toEqual(['ConnectionActivated']);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/meta_ads.*invalid_client.*CHANNEL_META_ADS_CLIENT_ID/));
      expect(JSON.stringify(errors.mock.calls)).not.toMatch(/token-42|refresh-42/);
      network.refuseClient = false;
      expect(value(await access(id)).accessToken).toBe('refreshed-access-1');
    });

    it("answers connection_required for another account's, a deleted or a sandbox connection", async () => {
      const id = await connect({ access_token: 'token-42' });
      expect(await h.access.access({ accountId: 'acct_2', mode: 'live', connectionId: id })).toMatchObject({
        ok: false,
        error: { code: 'connection_required' },
      });
      expect(await h.access.access({ accountId: 'acct_1', mode: 'test', connectionId: id })).toMatchObject({
        ok: false,
        error: { code: 'connection_required' },
      });
      const sandbox = value(await h.commands.create({ caller: callerOf('acct_1', 'test'), channel: 'meta_ads', providerAccountId: 'act_1' })).id;
      expect(await h.access.access({ accountId: 'acct_1', mode: 'test', connectionId: sandbox })).toMatchObject({
        ok: false,
        error: { code: 'connection_required' },
      });
      value(await h.commands.remove({ caller: live, id }));
      expect(await access(id)).toMatchObject({ ok: false, error: { code: 'connection_required' } });
    });
  });

  describe('svc.connection.reauth-required', () => {
    it('moves the connection once, however often it is said', async () => {
      const id = await connect({ access_token: 'token-42' });
      const report = { accountId: 'acct_1', mode: 'live' as const, connectionId: id, channel: 'meta_ads' as const, reason: 'token_refused:190' };
      expect(await h.access.reauthRequired(report)).toEqual({ ok: true, value: { connection: { id, status: 'reauth_required' } } });
      expect(await h.access.reauthRequired({ ...report, reason: 'again' })).toEqual({ ok: true, value: { connection: { id, status: 'reauth_required' } } });
      expect(await types(id)).toEqual(['ConnectionActivated', 'ReauthRequired']);
      expect((await view(id)).reauth_reason).toBe('token_refused:190');
    });

    it('changes nothing for a refusal of tokens older than those on file (reauthorized since)', async () => {
      const id = await connect({ access_token: 'token-42' });
      const given = value(await access(id));
      network.account('act_42', META_EUR, 'token-43');
      expect((await h.commands.reauthorize({ caller: live, id, credentials: { access_token: 'token-43' } })).ok).toBe(true);
      const stale = {
        accountId: 'acct_1',
        mode: 'live' as const,
        connectionId: id,
        channel: 'meta_ads' as const,
        reason: 'token_refused:190',
        refusedVersion: given.tokenVersion,
      };
      expect(await h.access.reauthRequired(stale)).toEqual({ ok: true, value: { connection: { id, status: 'active' } } });
      expect(await h.access.reauthRequired({ ...stale, refusedVersion: given.tokenVersion + 1 })).toEqual({
        ok: true,
        value: { connection: { id, status: 'reauth_required' } },
      });
    });

    it("moves the channel's sandbox connection when no connection is named, and nothing else", async () => {
      const test = callerOf('acct_1', 'test');
      const sandbox = value(await h.commands.create({ caller: test, channel: 'meta_ads', providerAccountId: 'act_1' })).id;
      const other = value(await h.commands.create({ caller: test, channel: 'google_ads', providerAccountId: '1' })).id;
      const liveOne = await connect({ access_token: 'token-42' });
      expect(await h.access.reauthRequired({ accountId: 'acct_1', mode: 'test', connectionId: null, channel: 'meta_ads', reason: 'sandbox_reauth' })).toEqual({
        ok: true,
        value: { connection: { id: sandbox, status: 'reauth_required' } },
      });
      expect(value(await h.queries.get({ caller: test, id: other })).status).toBe('active');
      expect((await view(liveOne)).status).toBe('active');
      // said again: the same connection, moved once
      expect(await h.access.reauthRequired({ accountId: 'acct_1', mode: 'test', connectionId: null, channel: 'meta_ads', reason: 'sandbox_reauth' })).toEqual({
        ok: true,
        value: { connection: { id: sandbox, status: 'reauth_required' } },
      });
      expect((await h.events.readStream(`connection-${sandbox}`)).map((e) => e.type)).toEqual(['ConnectionActivated', 'ReauthRequired']);
      expect(await h.access.reauthRequired({ accountId: 'acct_1', mode: 'test', connectionId: null, channel: 'tiktok_ads', reason: 'sandbox_reauth' })).toEqual(
        { ok: true, value: { connection: null } },
      );
    });

    it("leaves another account's connection alone", async () => {
      const id = await connect({ access_token: 'token-42' });
      expect(await h.access.reauthRequired({ accountId: 'acct_2', mode: 'live', connectionId: id, channel: 'meta_ads', reason: 'x' })).toEqual({
        ok: true,
        value: { connection: null },
      });
      expect((await view(id)).status).toBe('active');
    });
  });

  describe('the refresh sweep', () => {
    it('refreshes the active live connections that expire within 10 minutes, and only those', async () => {
      const expiring = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(8) });
      const later = await connect({ access_token: 'token-42', refresh_token: 'refresh-43', expires_at: inMinutes(30) }, callerOf('acct_2', 'live'));
      const never = await connect({ access_token: 'token-42', refresh_token: 'refresh-44' }, callerOf('acct_3', 'live'));
      const gone = await connect({ access_token: 'token-42', refresh_token: 'refresh-45', expires_at: inMinutes(8) }, callerOf('acct_4', 'live'));
      value(await h.commands.remove({ caller: callerOf('acct_4', 'live'), id: gone }));
      // a sandbox connection never expires at a network
      value(
        await h.commands.create({
          caller: callerOf('acct_1', 'test'),
          channel: 'meta_ads',
          providerAccountId: 'act_1',
          credentials: { access_token: 'x', expires_at: inMinutes(1) },
        }),
      );
      expect(await h.access.refreshExpiring()).toEqual({ checked: 1, failed: 0 });
      expect([await types(expiring), await types(later), await types(never)]).toEqual([
        ['ConnectionActivated', 'TokenRefreshed'],
        ['ConnectionActivated'],
        ['ConnectionActivated'],
      ]);
      expect(await h.access.refreshExpiring()).toEqual({ checked: 0, failed: 0 });
    });

    it('moves a connection whose refresh is refused to reauth_required', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'dead', expires_at: inMinutes(3) });
      network.refuseRefresh('dead');
      expect(await h.access.refreshExpiring()).toEqual({ checked: 1, failed: 1 });
      expect((await view(id)).status).toBe('reauth_required');
    });
  });

  describe('the refresh sweep, when the network refuses the OAuth client', () => {
    it('counts the connection as failed and leaves it active', async () => {
      jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(3) });
      network.refuseClient = true;
      expect(await h.access.refreshExpiring()).toEqual({ checked: 1, failed: 1 });
      expect((await view(id)).status).toBe('active');
    });
  });

  describe('partner events', () => {
    const relayed = async (id: string) => {
      const published: Array<{ subject: string; data: PartnerEvent; msgId?: string }> = [];
      const bus = {
        publish: async (subject: string, data: PartnerEvent, options?: { msgId?: string }) => void published.push({ subject, data, msgId: options?.msgId }),
      } as unknown as Bus;
      for (const event of await h.events.readStream(`connection-${id}`))
        await relayConnectionEvent(h.store, partnerEventsOnBus(bus), { ...event, position: '0' });
      return { published, events: await h.events.readStream(`connection-${id}`) };
    };

    it('relays connection.active and connection.reauth_required with the data of docs/api.md#webhooks-and-signatures, ids derived from the events', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'dead', expires_at: inMinutes(3) });
      network.refuseRefresh('dead');
      await access(id);
      const { published, events } = await relayed(id);
      expect(published).toEqual([
        {
          subject: 'evt.partner.connection_active',
          msgId: `partner-${events[0].id}`,
          data: {
            id: expect.stringMatching(/^evt_/),
            event: 'connection.active',
            timestamp: events[0].occurredAt,
            data: { connection_id: id, channel: 'meta_ads', status: 'active', provider_account_id: 'act_42', environment: 'live' },
            accountId: 'acct_1',
            mode: 'live',
          },
        },
        {
          subject: 'evt.partner.connection_reauth_required',
          msgId: `partner-${events[1].id}`,
          data: expect.objectContaining({
            event: 'connection.reauth_required',
            data: {
              connection_id: id,
              channel: 'meta_ads',
              status: 'reauth_required',
              provider_account_id: 'act_42',
              environment: 'live',
              reason: 'refresh_refused',
            },
          }),
        },
      ]);
      expect(JSON.stringify(published)).not.toMatch(/token-42|dead/);
    });

    it('says nothing of refreshes, rounds and revocations', async () => {
      const id = await connect({ access_token: 'token-42', refresh_token: 'refresh-42', expires_at: inMinutes(3) });
      await access(id);
      value(await h.commands.remove({ caller: live, id }));
      expect((await relayed(id)).published.map((p) => p.data.event)).toEqual(['connection.active']);
    });
  });
});
