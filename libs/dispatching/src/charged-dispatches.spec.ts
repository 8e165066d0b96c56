import { creditLedgerStreamId } from '@campaign-ops/dispatch-domain';
import { WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ChargedDispatches } from './charged-dispatches';
import { CreditLedgers } from './credit-ledgers';
import { DispatchStore } from './dispatch-store';

describe('one charge, one dispatch (the ledger processor completes a charge left without its dispatch)', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let ledgers: CreditLedgers;
  let store: DispatchStore;
  let charged: ChargedDispatches;

  beforeEach(() => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    ledgers = new CreditLedgers(events, reads);
    store = new DispatchStore(events, reads);
    charged = new ChargedDispatches(store, ledgers);
  });

  /** Credits for two launches on acct_7's test ledger. */
  const grant = () => ledgers.execute('acct_7', 'test', { type: 'GrantCredits', grantId: 'g1', amount: 2, now: new Date().toISOString() }, {});
  /** A launch's charge on that ledger for `dispatchId`: the DispatchCharged event. */
  const charge = async (dispatchId: string, requestId: string | null = null, now = new Date().toISOString()) => {
    const dispatch = { dispatchId, channel: 'meta_ads' as const, campaign: {} as never, connectionId: null, idempotencyKey: null, requestId };
    return (await ledgers.execute('acct_7', 'test', { type: 'ChargeForDispatch', dispatch, now }, {})).recorded[0];
  };

  afterEach(async () => {
    jest.restoreAllMocks();
    await events.close();
    await reads.close();
  });

  it('makes sure every charge on a ledger has its dispatch, for the account and mode of that ledger', async () => {
    await ledgers.execute('acct-with-dashes', 'test', { type: 'GrantCredits', grantId: 'g1', amount: 2, now: new Date().toISOString() }, {});
    const dispatch = {
      dispatchId: 'dsp_1',
      channel: 'meta_ads' as const,
      campaign: {
        name: 'n',
        objective: 'conversion',
        budget: { amount_micros: 1, currency: 'USD', type: 'daily' as const },
        schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'UTC' },
      },
      connectionId: null,
      idempotencyKey: null,
      requestId: null,
    };
    const { recorded } = await ledgers.execute('acct-with-dashes', 'test', { type: 'ChargeForDispatch', dispatch, now: new Date().toISOString() }, {});
    const [grant] = await events.readStream(creditLedgerStreamId('acct-with-dashes', 'test'));
    await charged.completeCharge(grant);
    expect(await store.views.get('dsp_1')).toBeNull();
    await charged.completeCharge(recorded[0]);
    expect(await store.views.get('dsp_1')).toMatchObject({ id: 'dsp_1', account_id: 'acct-with-dashes', mode: 'test', status: 'accepted' });
    expect((await ledgers.load('acct-with-dashes', 'test')).state.balance).toBe(1);

    // Seen again (a restart from an older checkpoint): the dispatch and the ledger's view are there,
    // so it neither writes nor reads the streams.
    const append = jest.spyOn(events, 'append');
    const read = jest.spyOn(events, 'readStream');
    await charged.completeCharge(recorded[0]);
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
    await charged.completeCharge(recorded[0]);
    expect(await store.views.get('dsp_2')).toMatchObject({ status: 'accepted', account_id: 'acct_7', mode: 'live' });
  });

  it('finds the charge of a dispatch on its ledger, and nothing for a dispatch never charged', async () => {
    await ledgers.execute('acct_7', 'test', { type: 'GrantCredits', grantId: 'g1', amount: 2, now: new Date().toISOString() }, {});
    const dispatch = { dispatchId: 'dsp_3', channel: 'meta_ads' as const, campaign: {} as never, connectionId: null, idempotencyKey: 'k', requestId: null };
    const { recorded } = await ledgers.execute('acct_7', 'test', { type: 'ChargeForDispatch', dispatch, now: new Date().toISOString() }, {});
    await expect(charged.orphanedCharge('acct_7', 'test', 'dsp_3')).resolves.toMatchObject({ id: recorded[0].id, type: 'DispatchCharged' });
    await expect(charged.orphanedCharge('acct_7', 'test', 'dsp_4')).resolves.toBeUndefined();
    await expect(charged.orphanedCharge('acct_7', 'live', 'dsp_3')).resolves.toBeUndefined();
  });

  it('makes a dispatch once however often its charge is made into one', async () => {
    await grant();
    const recorded = [await charge('dsp_5')];
    await charged.make(recorded[0], 'acct_7', 'test');
    await charged.make(recorded[0], 'acct_7', 'test');
    expect(await events.readStream('dispatch-dsp_5')).toHaveLength(1);
    await expect(charged.exists('dsp_5')).resolves.toBe(true);
    expect(creditLedgerStreamId('acct_7', 'test')).toBe('credits-acct_7-test');
  });

  it('makes a dispatch once when the ledger processor is told of its charge while the launch is still making it', async () => {
    await grant();
    const recorded = [await charge('dsp_6')];
    const append = jest.spyOn(events, 'append');
    const upsert = jest.spyOn(store.views, 'upsert');
    const looked = jest.spyOn(store.views, 'revisionOf');
    // The launch's append is under way (not committed yet) when the processor looks.
    const launch = charged.make(recorded[0], 'acct_7', 'test');
    const processor = charged.completeCharge(recorded[0]);
    const [made] = await Promise.all([launch, processor]);
    expect(made).toMatchObject({ id: 'dsp_6', status: 'accepted' });
    expect(append).toHaveBeenCalledTimes(1);
    expect(upsert).toHaveBeenCalledTimes(1);
    expect(looked).not.toHaveBeenCalled();
    // Once made, a make is a make again (not the one under way): it finds the dispatch there.
    await charged.make(recorded[0], 'acct_7', 'test');
    expect(append).toHaveBeenCalledTimes(2);
    expect(await events.readStream('dispatch-dsp_6')).toHaveLength(1);
  });

  it('lets a make that failed be made again, by the launch or the processor', async () => {
    await grant();
    const recorded = [await charge('dsp_7')];
    jest.spyOn(events, 'append').mockRejectedValueOnce(new Error('disk full'));
    const launch = charged.make(recorded[0], 'acct_7', 'test');
    const processor = charged.completeCharge(recorded[0]);
    await expect(launch).rejects.toThrow('disk full');
    await expect(processor).rejects.toThrow('disk full');
    await charged.completeCharge(recorded[0]);
    expect(await store.views.get('dsp_7')).toMatchObject({ status: 'accepted' });
  });

  it("stores the dispatch's first event with the launch's account, mode and request id, under an id of its own charge", async () => {
    await grant();
    const now = new Date().toISOString();
    // Two charges of the same millisecond: each dispatch's event id still derives from its own charge.
    const [first, second] = [await charge('dsp_8', 'req_1', now), await charge('dsp_9', 'req_1', now)];
    await charged.make(first, 'acct_7', 'test');
    await charged.make(second, 'acct_7', 'test');
    const [made] = await events.readStream('dispatch-dsp_8');
    expect(made.metadata).toMatchObject({ accountId: 'acct_7', mode: 'test', requestId: 'req_1' });
    const other = await events.readStream('dispatch-dsp_9');
    expect(other).toHaveLength(1);
    expect(other[0].id).not.toBe(made.id);
  });

  it('brings the view up from the stream when the store says the dispatch was made before', async () => {
    await grant();
    const recorded = [await charge('dsp_10')];
    await charged.make(recorded[0], 'acct_7', 'test');
    await reads.collection('dispatches').delete('dsp_10');
    // As EventStoreDB may answer a repeat past its idempotency window: the stream exists.
    jest.spyOn(events, 'append').mockRejectedValueOnce(new WrongExpectedRevisionError('dispatch-dsp_10', 'no_stream', 0));
    await expect(charged.make(recorded[0], 'acct_7', 'test')).resolves.toMatchObject({ id: 'dsp_10', status: 'accepted' });
    expect(await store.views.get('dsp_10')).toMatchObject({ id: 'dsp_10', status: 'accepted' });
  });
});
