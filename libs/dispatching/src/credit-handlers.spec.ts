import { InProcessBus } from '@campaign-ops/bus';
import { creditLedgerStreamId } from '@campaign-ops/dispatch-domain';
import { SqliteEventStore } from '@campaign-ops/event-store';
import { SqliteReadStore } from '@campaign-ops/read-store';
import { SUBJECTS } from '@campaign-ops/service-messages';
import { CreditHandlers } from './credit-handlers';
import { CreditLedgers } from './credit-ledgers';
import { DispatchCommands } from './dispatch-commands';
import { LiveLaunches } from './live-launches';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchStore } from './dispatch-store';

describe('credit handlers of dispatch-service', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let ledgers: CreditLedgers;
  let store: DispatchStore;
  let handlers: CreditHandlers;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    await bus.respond(SUBJECTS.connectionResolve, async () => ({ connection: null }));
    ledgers = new CreditLedgers(events, reads);
    store = new DispatchStore(events, reads);
    handlers = new CreditHandlers(ledgers, new DispatchCommands(store, ledgers, new DispatchIdempotency(reads), bus, new LiveLaunches({}, bus)));
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await bus.close();
    await events.close();
    await reads.close();
  });

  const relayed = (type: string, data: Record<string, unknown>, id = 'evt_1') => ({ id, streamId: 'account-acct_7', type, data, metadata: {}, occurredAt: new Date().toISOString(), revision: 0 });

  it('applies every grant and answers both balances', async () => {
    const answer = await handlers.grant({ accountId: 'acct_1', grants: [{ grantId: 'g1', mode: 'live', amount: 5 }, { grantId: 'g2', mode: 'test', amount: 3 }, { grantId: 'g3', mode: 'test', amount: 4 }] });
    expect(answer).toEqual({ ok: true, value: { live: 5, test: 7 } });
    expect(await handlers.balances({ accountId: 'acct_1' })).toEqual({ ok: true, value: { live: 5, test: 7 } });
  });

  it("credits an opened account's starting credits from the gateway's event, once however often it is relayed", async () => {
    const opened = relayed('AccountOpened', { accountId: 'acct_7', name: 'A', credits: { live: 100, test: 50 }, openedAt: new Date().toISOString() });
    await handlers.onAccountEvent(opened);
    await handlers.onAccountEvent(opened);
    expect(await handlers.balances({ accountId: 'acct_7' })).toEqual({ ok: true, value: { live: 100, test: 50 } });
  });

  it('writes nothing for account events that carry no credits', async () => {
    await handlers.onAccountEvent(relayed('ApiKeyIssued', { keyId: 'key_1', mode: 'live', keyHash: 'h', issuedAt: new Date().toISOString() }));
    await handlers.onAccountEvent(relayed('AccountOpened', { accountId: 'acct_7', name: 'A', credits: { live: 0, test: 0 }, openedAt: new Date().toISOString() }, 'evt_2'));
    expect(await events.readStream(creditLedgerStreamId('acct_7', 'live'))).toEqual([]);
    expect(await events.readStream(creditLedgerStreamId('acct_7', 'test'))).toEqual([]);
  });

  it('leaves the ledgers alone for account events that carry no credits, so such events pass even while the ledgers cannot be read', async () => {
    jest.spyOn(events, 'readStream').mockRejectedValue(new Error('event store down'));
    await expect(handlers.onAccountEvent(relayed('ApiKeyIssued', { keyId: 'key_1', mode: 'live', keyHash: 'h', issuedAt: new Date().toISOString() }))).resolves.toBeUndefined();
    await expect(handlers.onAccountEvent(relayed('AccountOpened', { accountId: 'acct_7', name: 'A', credits: { live: 5, test: 0 }, openedAt: new Date().toISOString() }, 'evt_2'))).rejects.toThrow('event store down');
  });

  it('makes sure every charge on a ledger has its dispatch, for the account and mode of that ledger', async () => {
    await ledgers.execute('acct-with-dashes', 'test', { type: 'GrantCredits', grantId: 'g1', amount: 2, now: new Date().toISOString() }, {});
    const dispatch = {
      dispatchId: 'dsp_1',
      channel: 'meta_ads' as const,
      campaign: { name: 'n', objective: 'conversion', budget: { amount_micros: 1, currency: 'USD', type: 'daily' as const }, schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'UTC' } },
      connectionId: null,
      idempotencyKey: null,
      requestId: null,
    };
    const { recorded } = await ledgers.execute('acct-with-dashes', 'test', { type: 'ChargeForDispatch', dispatch, now: new Date().toISOString() }, {});
    const [grant] = await events.readStream(creditLedgerStreamId('acct-with-dashes', 'test'));
    await handlers.onLedgerEvent(grant);
    expect(await store.views.get('dsp_1')).toBeNull();
    await handlers.onLedgerEvent(recorded[0]);
    expect(await store.views.get('dsp_1')).toMatchObject({ id: 'dsp_1', account_id: 'acct-with-dashes', mode: 'test', status: 'accepted' });
    expect(await handlers.balances({ accountId: 'acct-with-dashes' })).toEqual({ ok: true, value: { live: 0, test: 1 } });

    // Seen again (a restart from an older checkpoint): the dispatch and the ledger's view are there,
    // so it neither writes nor reads the streams.
    const append = jest.spyOn(events, 'append');
    const read = jest.spyOn(events, 'readStream');
    await handlers.onLedgerEvent(recorded[0]);
    expect(append).not.toHaveBeenCalled();
    expect(read).not.toHaveBeenCalled();
  });

  it('makes the dispatch of a charge whose launch died before making it, and brings a stale ledger view up', async () => {
    await ledgers.execute('acct_7', 'live', { type: 'GrantCredits', grantId: 'g1', amount: 2, now: new Date().toISOString() }, {});
    const dispatch = { dispatchId: 'dsp_2', channel: 'meta_ads' as const, campaign: {} as never, connectionId: null, idempotencyKey: null, requestId: null };
    const { recorded } = await ledgers.execute('acct_7', 'live', { type: 'ChargeForDispatch', dispatch, now: new Date().toISOString() }, {});
    // As if the view had been written before the charge: it holds revision 0 only.
    await reads.collection('credit_ledgers').delete('acct_7:live');
    await ledgers.refreshView('acct_7', 'live', 0);
    expect(await ledgers.views.get('acct_7:live')).toMatchObject({ balance: 1, revision: 1 });
    await handlers.onLedgerEvent(recorded[0]);
    expect(await store.views.get('dsp_2')).toMatchObject({ status: 'accepted', account_id: 'acct_7', mode: 'live' });
  });
});
