import { InProcessBus } from '@campaign-ops/adapters/bus';
import { creditLedgerStreamId } from '@campaign-ops/dispatch-domain';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SUBJECTS } from '@campaign-ops/service-messages';
import { CreditHandlers } from './credit-handlers';
import { CreditLedgers } from './credit-ledgers';

describe('credit handlers of dispatch-service', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let ledgers: CreditLedgers;
  let handlers: CreditHandlers;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    await bus.respond(SUBJECTS.connectionResolve, async () => ({ connection: null }));
    ledgers = new CreditLedgers(events, reads);
    handlers = new CreditHandlers(ledgers);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await bus.close();
    await events.close();
    await reads.close();
  });

  const relayed = (type: string, data: Record<string, unknown>, id = 'evt_1') => ({
    id,
    streamId: 'account-acct_7',
    type,
    data,
    metadata: {},
    occurredAt: new Date().toISOString(),
    revision: 0,
  });

  it('applies every grant and answers both balances', async () => {
    const answer = await handlers.grant({
      accountId: 'acct_1',
      grants: [
        { grantId: 'g1', mode: 'live', amount: 5 },
        { grantId: 'g2', mode: 'test', amount: 3 },
        { grantId: 'g3', mode: 'test', amount: 4 },
      ],
    });
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
    await handlers.onAccountEvent(
      relayed('AccountOpened', { accountId: 'acct_7', name: 'A', credits: { live: 0, test: 0 }, openedAt: new Date().toISOString() }, 'evt_2'),
    );
    expect(await events.readStream(creditLedgerStreamId('acct_7', 'live'))).toEqual([]);
    expect(await events.readStream(creditLedgerStreamId('acct_7', 'test'))).toEqual([]);
  });

  it('leaves the ledgers alone for account events that carry no credits, so such events pass even while the ledgers cannot be read', async () => {
    jest.spyOn(events, 'readStream').mockRejectedValue(new Error('event store down'));
    await expect(
      handlers.onAccountEvent(relayed('ApiKeyIssued', { keyId: 'key_1', mode: 'live', keyHash: 'h', issuedAt: new Date().toISOString() })),
    ).resolves.toBeUndefined();
    await expect(
      handlers.onAccountEvent(
        relayed('AccountOpened', { accountId: 'acct_7', name: 'A', credits: { live: 5, test: 0 }, openedAt: new Date().toISOString() }, 'evt_2'),
      ),
    ).rejects.toThrow('event store down');
  });
});
