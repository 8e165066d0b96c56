import { Bus } from '@campaign-ops/bus';
import { Outcome } from '@campaign-ops/api-errors';
import { callerOf, connectionsHarness, ConnectionsHarness, InMemoryNetwork, settingsFor } from '@campaign-ops/testing/connections';
import { ConnectionProcessors } from './connection-processors';
import { SPENT_STATE_WINDOW_MS } from './oauth-rounds';

describe('connection-service: the periodic sweep', () => {
  let network: InMemoryNetwork;
  let h: ConnectionsHarness;
  let processors: ConnectionProcessors;
  const value = <T>(outcome: Outcome<T>): T => {
    if (!outcome.ok) throw new Error(`expected success, got ${JSON.stringify(outcome.error)}`);
    return outcome.value;
  };

  beforeEach(() => {
    network = new InMemoryNetwork('meta_ads').account('act_42', { currency: 'EUR', timezone: 'Europe/Berlin' }, 'token-42');
    h = connectionsHarness({ meta_ads: network }, { meta_ads: settingsFor('meta_ads', true) });
    processors = new ConnectionProcessors({} as Bus, h.events, h.reads, h.settings, h.store, h.vault, h.access, h.rounds);
  });
  afterEach(() => h.close());

  const stateRecord = (id: string, expiresAt: number) => ({
    id,
    connection_id: 'con_1',
    account_id: 'acct_1',
    mode: 'live' as const,
    redirect_uri: 'https://partner.example/back',
    expires_at: new Date(expiresAt).toISOString(),
    sandbox: null,
    created_at: new Date(expiresAt - 15 * 60_000).toISOString(),
  });

  it('refreshes the expiring connections and deletes the OAuth state records past their window', async () => {
    const id = value(
      await h.commands.create({
        caller: callerOf('acct_1', 'live'),
        channel: 'meta_ads',
        providerAccountId: 'act_42',
        credentials: { access_token: 'token-42', refresh_token: 'refresh-42', expires_at: new Date(Date.now() + 60_000).toISOString() },
      }),
    ).id;
    await h.store.oauthStates.insert(stateRecord('a'.repeat(64), Date.now() - SPENT_STATE_WINDOW_MS - 1));
    await h.store.oauthStates.insert(stateRecord('b'.repeat(64), Date.now() - SPENT_STATE_WINDOW_MS + 60_000));

    await processors.sweepOnce();

    expect((await h.vault.read(id))?.accessToken).toBe('refreshed-access-1');
    expect([await h.store.oauthStates.get('a'.repeat(64)), await h.store.oauthStates.get('b'.repeat(64))]).toEqual([
      null,
      expect.objectContaining({ id: 'b'.repeat(64) }),
    ]);
  });

  it('still deletes state records when the refresh sweep fails', async () => {
    jest.spyOn(h.access, 'refreshExpiring').mockRejectedValueOnce(new Error('read store down'));
    await h.store.oauthStates.insert(stateRecord('a'.repeat(64), Date.now() - SPENT_STATE_WINDOW_MS - 1));
    await processors.sweepOnce();
    expect(await h.store.oauthStates.get('a'.repeat(64))).toBeNull();
  });
});
