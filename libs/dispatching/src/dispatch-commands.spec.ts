import { LocalServices } from '@campaign-ops/service-runtime';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { CampaignSpec } from '@campaign-ops/channels';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { CreateDispatchRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { ChargedDispatches } from './charged-dispatches';
import { CreditLedgers } from './credit-ledgers';
import { DispatchCommands } from './dispatch-commands';
import { LiveLaunches } from './live-launches';
import { DispatchBacklog, executorOnBus } from './dispatch-backlog';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchStore } from './dispatch-store';

const campaign: CampaignSpec = {
  name: 'Spring',
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
};

describe('launching with an Idempotency-Key, in dispatch-service', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let ledgers: CreditLedgers;
  let idempotency: DispatchIdempotency;
  let store: DispatchStore;
  let commands: DispatchCommands;
  let charged: ChargedDispatches;
  let backlog: DispatchBacklog;
  const caller = { accountId: 'acct_1', mode: 'test' as const, requestId: 'req_1' };
  const launch = (key: string | null, name = 'Spring'): Promise<ReturnType<DispatchCommands['create']> extends Promise<infer T> ? T : never> =>
    commands.create({ caller, channel: 'meta_ads', campaign: { ...campaign, name }, idempotencyKey: key } as CreateDispatchRequest);
  const charges = async () => (await ledgers.history('acct_1', 'test')).filter((e) => e.type === 'DispatchCharged').length;
  const balance = async () => (await ledgers.load('acct_1', 'test')).state.balance;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    await bus.respond(SUBJECTS.connectionResolve, async () => ({ connection: null }));
    ledgers = new CreditLedgers(events, reads);
    idempotency = new DispatchIdempotency(reads);
    store = new DispatchStore(events, reads);
    charged = new ChargedDispatches(store, ledgers);
    backlog = new DispatchBacklog(executorOnBus(bus), { dispatchBacklogSeconds: 10 });
    commands = new DispatchCommands(store, ledgers, charged, idempotency, bus, new LiveLaunches({}, bus), backlog, new LocalServices());
    await ledgers.execute('acct_1', 'test', { type: 'GrantCredits', grantId: 'g1', amount: 10, now: new Date().toISOString() }, {});
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await bus.close();
    await events.close();
    await reads.close();
  });

  it('refuses a launch while more waits at the executor than it starts within the bound: 503 with Retry-After, nothing charged or stored, the key given back', async () => {
    let now = 1_000_000;
    backlog.now = () => now;
    const progress = jest.spyOn(bus, 'progress').mockResolvedValue({ pending: 0, settled: 0 });
    backlog.check();
    await backlog.settled();
    // 20 settled a second, 10 s of bound: 300 waiting is 5 s too many.
    now += 1_000;
    progress.mockResolvedValue({ pending: 300, settled: 20 });
    backlog.check();
    await backlog.settled();
    const before = { charges: await charges(), balance: await balance(), dispatches: await store.views.count({}) };

    const refused = await launch('k9');
    expect(refused).toMatchObject({
      ok: false,
      error: { code: 'service_unavailable', message: expect.stringMatching(/300 are waiting/) },
      retryAfterSeconds: 5,
    });
    expect({ charges: await charges(), balance: await balance(), dispatches: await store.views.count({}) }).toEqual(before);
    expect(progress).toHaveBeenCalledWith('dispatch-executor');

    // Worked off: the same key launches now.
    now += 1_000;
    progress.mockResolvedValue({ pending: 0, settled: 320 });
    backlog.check();
    await backlog.settled();
    expect(await launch('k9')).toMatchObject({ ok: true });
    expect(await charges()).toBe(before.charges + 1);
  });

  it('answers the same dispatch for the same key, charged once', async () => {
    const first = await launch('k1');
    const again = await launch('k1');
    expect(first.ok && again.ok && again.value.id === first.value.id).toBe(true);
    expect(await charges()).toBe(1);
  });

  it('refuses the same key with another campaign', async () => {
    await launch('k1');
    expect(await launch('k1', 'Autumn')).toMatchObject({ ok: false, error: { code: 'idempotency_key_reused' } });
  });

  it('keeps the key when a failure may have come after the charge, so a retry cannot charge again', async () => {
    const upsert = jest.spyOn(ledgers.views, 'upsert').mockRejectedValueOnce(new Error('disk full'));
    await expect(launch('k2')).rejects.toThrow('disk full');
    upsert.mockRestore();
    const retry = await launch('k2');
    // The charge was written: the retry gets that dispatch (made from its charge), never a second one.
    expect(retry.ok).toBe(true);
    expect(await charges()).toBe(1);
    expect(await balance()).toBe(9);
  });

  it('makes the dispatch of an orphaned charge when a retry comes, instead of charging again', async () => {
    const createDispatch = jest.spyOn(charged, 'make').mockRejectedValueOnce(new Error('killed'));
    await expect(launch('k3')).rejects.toThrow('killed');
    createDispatch.mockRestore();
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
    const retry = await launch('k3');
    expect(retry.ok && retry.value.status).toBe('accepted');
    expect(await charges()).toBe(1);
  });

  it('gives the key back on 402, so the same key works once credits are added', async () => {
    await ledgers.execute('acct_1', 'test', { type: 'GrantCredits', grantId: 'g-neg', amount: -10, now: new Date().toISOString() }, {});
    expect(await launch('k4')).toMatchObject({ ok: false, error: { code: 'insufficient_credits' } });
    await ledgers.execute('acct_1', 'test', { type: 'GrantCredits', grantId: 'g2', amount: 1, now: new Date().toISOString() }, {});
    expect((await launch('k4')).ok).toBe(true);
    expect(await charges()).toBe(1);
  });
});

describe('dispatch-service idempotency records', () => {
  it('are forgotten once their 24 h are over', async () => {
    const reads = SqliteReadStore.open(':memory:');
    const keys = new DispatchIdempotency(reads);
    expect(await keys.claim('acct_1', 'test', 'old', 'dsp_1', {})).toEqual({ kind: 'claimed' });
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now + 25 * 60 * 60 * 1000);
    expect(await keys.claim('acct_1', 'test', 'young', 'dsp_2', {})).toEqual({ kind: 'claimed' });
    expect(await keys.sweep()).toBe(1);
    expect(await keys.claim('acct_1', 'test', 'young', 'dsp_3', {})).toMatchObject({ kind: 'taken', dispatchId: 'dsp_2' });
    jest.restoreAllMocks();
    await reads.close();
  });
});
