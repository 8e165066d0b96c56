import { InsufficientCredits, DispatchToCreate } from '@campaign-ops/dispatch-domain';
import { SqliteEventStore, WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { SqliteReadStore } from '@campaign-ops/read-store';
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
    campaign: { name: `Launch ${n}`, objective: 'conversion', budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' }, schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'UTC' } },
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
    const charges = Array.from({ length: 20 }, (_, n) => replicas[n % 2].execute('acct_1', 'test', { type: 'ChargeForDispatch', dispatch: dispatch(n), now: now() }, {}));
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
