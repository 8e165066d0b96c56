import { InsufficientCredits, DispatchToCreate } from '@campaign-ops/dispatch-domain';
import { WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { CreditLedgers } from './credit-ledgers';

/**
 * Two replicas of dispatch-service each have their own CreditLedgers, hence their own in-process
 * mutex: only the stream's expected revision keeps their charges from overdrawing the ledger.
 */
describe('credit ledgers shared by two replicas', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;

  beforeEach(() => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await events.close();
    await reads.close();
  });

  const now = () => new Date().toISOString();
  const dispatch = (n: number): DispatchToCreate => ({
    dispatchId: `dsp_${n}`,
    channel: 'meta_ads',
    campaign: {
      name: `Launch ${n}`,
      objective: 'conversion',
      budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
      schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'UTC' },
    },
    connectionId: null,
    idempotencyKey: null,
    requestId: null,
  });

  it('never charges more than the balance when two instances charge one ledger at once', async () => {
    const replicas = [new CreditLedgers(events, reads), new CreditLedgers(events, reads)];
    await replicas[0].execute('acct_1', 'test', { type: 'GrantCredits', grantId: 'g1', amount: 5, now: now() }, {});
    const append = events.append.bind(events);
    let conflicts = 0;
    jest.spyOn(events, 'append').mockImplementation((...args) =>
      append(...args).catch((error) => {
        if (error instanceof WrongExpectedRevisionError) conflicts++;
        throw error;
      }),
    );

    // 20 charges, alternating between the replicas, all in flight together.
    const charges = Array.from({ length: 20 }, (_, n) =>
      replicas[n % 2].execute('acct_1', 'test', { type: 'ChargeForDispatch', dispatch: dispatch(n), now: now() }, {}),
    );
    const outcomes = await Promise.allSettled(charges);

    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect({ charged: outcomes.length - refused.length, refused: refused.length }).toEqual({ charged: 5, refused: 15 });
    expect(refused.map((o) => o.reason)).toEqual(Array(15).fill(expect.any(InsufficientCredits)));
    // The replicas did race: one appended on a revision the other had already moved past.
    expect(conflicts).toBeGreaterThan(0);

    // The stream, read whole, agrees: one grant, five charges, at consecutive revisions.
    const history = await replicas[1].history('acct_1', 'test');
    expect(history.map((e) => e.type)).toEqual(['CreditsGranted', ...Array(5).fill('DispatchCharged')]);
    expect(history.map((e) => e.revision)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const replica of replicas) expect((await replica.load('acct_1', 'test')).state.balance).toBe(0);
  });
});

describe('a credit ledger', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let ledgers: CreditLedgers;
  const now = () => new Date().toISOString();
  const grant = (grantId: string, amount: number) => ({ type: 'GrantCredits' as const, grantId, amount, now: now() });

  beforeEach(() => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    ledgers = new CreditLedgers(events, reads);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await events.close();
    await reads.close();
  });

  it('answers the events it recorded, at their revisions, with the account, mode and caller in their metadata', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    const { state, recorded } = await ledgers.execute('acct_1', 'live', grant('g2', 3), { requestId: 'req_9' });
    expect(state.balance).toBe(8);
    expect(recorded).toEqual([
      expect.objectContaining({
        streamId: 'credits-acct_1-live',
        type: 'CreditsGranted',
        revision: 1,
        metadata: { requestId: 'req_9', accountId: 'acct_1', mode: 'live', version: 1 },
      }),
    ]);
    const stored = await ledgers.history('acct_1', 'live');
    expect(stored[1]).toMatchObject({ id: recorded[0].id, revision: 1, metadata: { requestId: 'req_9', accountId: 'acct_1', mode: 'live' } });
  });

  it('records nothing for a grant it already applied', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    const append = jest.spyOn(events, 'append');
    expect(await ledgers.execute('acct_1', 'live', grant('g1', 5), {})).toMatchObject({ recorded: [], state: { balance: 5 } });
    expect(append).not.toHaveBeenCalled();
  });

  it('decides a burst of commands together on the state each leaves, in one append, answering each with its own events', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 3), {});
    const append = jest.spyOn(events, 'append');
    const charge = (n: number) => ({
      type: 'ChargeForDispatch' as const,
      dispatch: { dispatchId: `dsp_${n}`, channel: 'meta_ads' as const, campaign: {} as never, connectionId: null, idempotencyKey: null, requestId: null },
      now: now(),
    });
    const outcomes = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => ledgers.execute('acct_1', 'live', charge(n), { requestId: `req_${n}` })));

    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect((outcomes[3] as PromiseRejectedResult).reason).toBeInstanceOf(InsufficientCredits);
    const answered = outcomes.slice(0, 3).map((o) => (o as PromiseFulfilledResult<Awaited<ReturnType<CreditLedgers['execute']>>>).value);
    expect(answered.map((a) => a.state.balance)).toEqual([2, 1, 0]);
    expect(
      answered.map((a) => a.recorded.map((e) => [e.revision, (e.data as { dispatch: { dispatchId: string } }).dispatch.dispatchId, e.metadata.requestId])),
    ).toEqual([[[1, 'dsp_1', 'req_1']], [[2, 'dsp_2', 'req_2']], [[3, 'dsp_3', 'req_3']]]);
    // Written together: one charge a write would take three appends.
    expect(append.mock.calls.map(([, written]) => written.length).reduce((a, b) => a + b)).toBe(3);
    expect(append.mock.calls.length).toBeLessThan(3);
    expect((await ledgers.history('acct_1', 'live')).map((e) => e.id)).toEqual(
      ['g1', 1, 2, 3].map((_, i) => (i === 0 ? expect.any(String) : answered[i - 1].recorded[0].id)),
    );
    expect(await ledgers.views.get('acct_1:live')).toMatchObject({ balance: 0, revision: 3 });
  });

  it('fails every command of a write that fails, and goes on with the commands that come after', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    let writing!: () => void;
    const started = new Promise<void>((resolve) => (writing = resolve));
    let fail!: () => void;
    const failed = new Promise<void>((resolve) => (fail = resolve));
    jest.spyOn(events, 'append').mockImplementationOnce(async () => {
      writing();
      await failed;
      throw new Error('disk full');
    });
    const first = ledgers.execute('acct_1', 'live', grant('g2', 1), {});
    await started;
    // Queued behind the failing write: they go in the next one.
    const [second, third] = [ledgers.execute('acct_1', 'live', grant('g3', 1), {}), ledgers.execute('acct_1', 'live', grant('g4', 1), {})];
    fail();
    await expect(first).rejects.toThrow('disk full');
    await expect(second).resolves.toMatchObject({ state: { balance: 6 } });
    await expect(third).resolves.toMatchObject({ state: { balance: 7 } });
  });

  it('gives up after 50 conflicting writers in a row, and at once on any other failure', async () => {
    const conflict = jest.spyOn(events, 'append').mockRejectedValue(new WrongExpectedRevisionError('credits-acct_1-live', 'no_stream', 0));
    jest.spyOn(Math, 'random').mockReturnValue(0);
    await expect(ledgers.execute('acct_1', 'live', grant('g1', 5), {})).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect(conflict).toHaveBeenCalledTimes(51);
    conflict.mockReset().mockRejectedValue(new Error('disk full'));
    await expect(ledgers.execute('acct_1', 'live', grant('g1', 5), {})).rejects.toThrow('disk full');
    expect(conflict).toHaveBeenCalledTimes(1);
  });

  it('decides its next write on the state it last wrote, reading neither the view nor the stream', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    const readStream = jest.spyOn(events, 'readStream');
    const viewRead = jest.spyOn(ledgers.views, 'get');
    await expect(ledgers.execute('acct_1', 'live', grant('g2', 3), {})).resolves.toMatchObject({ state: { balance: 8 } });
    await expect(ledgers.execute('acct_1', 'live', grant('g3', 1), {})).resolves.toMatchObject({ state: { balance: 9 } });
    expect(readStream).not.toHaveBeenCalled();
    expect(viewRead).not.toHaveBeenCalled();
    expect((await ledgers.history('acct_1', 'live')).map((e) => e.revision)).toEqual([0, 1, 2]);
  });

  it('reads the ledger again when another writer appended since its last write, and decides on that', async () => {
    const other = new CreditLedgers(events, reads);
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    await other.execute('acct_1', 'live', grant('g2', 2), {});
    const append = jest.spyOn(events, 'append');
    // Its own last write says revision 0, balance 5: the append is refused, the ledger read again.
    await expect(ledgers.execute('acct_1', 'live', grant('g3', 1), {})).resolves.toMatchObject({ state: { balance: 8, grantIds: ['g1', 'g2', 'g3'] } });
    expect(append.mock.calls.map(([, , options]) => options.expectedRevision)).toEqual([0, 1]);
    // A failed write is forgotten too: the next one reads the ledger rather than trust it.
    append.mockRejectedValueOnce(new Error('disk full'));
    await expect(ledgers.execute('acct_1', 'live', grant('g4', 1), {})).rejects.toThrow('disk full');
    const readStream = jest.spyOn(events, 'readStream');
    await expect(ledgers.execute('acct_1', 'live', grant('g5', 1), {})).resolves.toMatchObject({ state: { balance: 9 } });
    expect(readStream).toHaveBeenCalled();
  });

  it('reads the whole stream when its view has no revision to continue from', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    await reads.collection('credit_ledgers').upsert({ id: 'acct_1:live', account_id: 'acct_1', mode: 'live', balance: 999, grant_ids: [] }, 7);
    expect(await ledgers.load('acct_1', 'live')).toEqual({ state: { accountId: 'acct_1', mode: 'live', balance: 5, grantIds: ['g1'] }, revision: 0 });
  });

  it('reads from the stream only the events its view does not hold yet, never the whole stream again', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    await ledgers.execute('acct_1', 'live', grant('g2', 3), {});
    const read = jest.spyOn(events, 'readStream');
    expect((await ledgers.load('acct_1', 'live')).state.balance).toBe(8);
    expect(await read.mock.results[0].value).toEqual([]);
    const otherReads = SqliteReadStore.open(':memory:');
    try {
      await new CreditLedgers(events, otherReads).execute('acct_1', 'live', grant('g3', 2), {});
    } finally {
      await otherReads.close();
    }
    read.mockClear();
    expect(await ledgers.load('acct_1', 'live')).toMatchObject({ state: { balance: 10 }, revision: 2 });
    expect((await read.mock.results[0].value).map((e: { revision: number }) => e.revision)).toEqual([2]);
  });

  it('continues from its view, and brings the view up to events another writer appended', async () => {
    await ledgers.execute('acct_1', 'live', grant('g1', 5), {});
    const other = new CreditLedgers(events, SqliteReadStore.open(':memory:'));
    await other.execute('acct_1', 'live', grant('g2', 2), {});
    expect(await ledgers.views.get('acct_1:live')).toMatchObject({ balance: 5, revision: 0 });
    expect((await ledgers.load('acct_1', 'live')).state.balance).toBe(7);
    await ledgers.refreshView('acct_1', 'live');
    expect(await ledgers.views.get('acct_1:live')).toMatchObject({ balance: 7, grant_ids: ['g1', 'g2'], revision: 1 });
    const read = jest.spyOn(events, 'readStream');
    await ledgers.refreshView('acct_1', 'live', 1);
    expect(read).not.toHaveBeenCalled();
    // A view behind the event it is asked about is brought up to it.
    await new CreditLedgers(events, SqliteReadStore.open(':memory:')).execute('acct_1', 'live', grant('g3', 1), {});
    await ledgers.refreshView('acct_1', 'live', 2);
    expect(await ledgers.views.get('acct_1:live')).toMatchObject({ balance: 8, grant_ids: ['g1', 'g2', 'g3'], revision: 2 });
    await ledgers.refreshView('acct_9', 'live');
    expect(await ledgers.views.get('acct_9:live')).toBeNull();
  });
});
