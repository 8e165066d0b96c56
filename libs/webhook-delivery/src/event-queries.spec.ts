import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { Mode } from '@campaign-ops/service-messages';
import { partnerEventsOf } from './delivery-store';
import { EventQueries } from './event-queries';

/** The Events API: a caller sees its own account's events in its own mode, filtered as asked. */
describe('EventQueries', () => {
  let dir: string;
  let reads: SqliteReadStore;
  let queries: EventQueries;

  const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();
  const caller = (accountId: string, mode: Mode) => ({ accountId, mode, requestId: 'req_1' });
  const list = async (accountId: string, mode: Mode, query: { type?: string; createdAfter?: string } = {}) => {
    const outcome = await queries.list({ caller: caller(accountId, mode), query: { limit: 100, ...query } });
    if (!outcome.ok) throw new Error(`list failed: ${JSON.stringify(outcome)}`);
    return outcome.value.data.map((e) => e.id);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'event-queries-'));
    reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    const events = partnerEventsOf(reads);
    const keep = (id: string, account_id: string, mode: Mode, type: string, created_at: string) =>
      events.insert({ id, account_id, mode, type, created_at, data: { dispatch_id: `dsp_${id}` } });
    await keep('evt_1', 'acct_a', 'test', 'dispatch.accepted', minutesAgo(30));
    await keep('evt_2', 'acct_a', 'test', 'dispatch.completed', minutesAgo(20));
    await keep('evt_3', 'acct_a', 'test', 'dispatch.failed', minutesAgo(10));
    await keep('evt_4', 'acct_a', 'test', 'dispatch.completed', minutesAgo(5));
    await keep('evt_5', 'acct_a', 'live', 'dispatch.completed', minutesAgo(5));
    await keep('evt_6', 'acct_b', 'test', 'dispatch.completed', minutesAgo(5));
    queries = new EventQueries(events);
  });

  afterAll(async () => {
    await reads.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists every type of the caller’s events, newest first', async () => {
    expect(await list('acct_a', 'test')).toEqual(['evt_4', 'evt_3', 'evt_2', 'evt_1']);
  });

  it('lists only the events of the type asked for', async () => {
    expect(await list('acct_a', 'test', { type: 'dispatch.completed' })).toEqual(['evt_4', 'evt_2']);
    expect(await list('acct_a', 'test', { type: 'dispatch.failed' })).toEqual(['evt_3']);
    expect(await list('acct_a', 'test', { type: 'dispatch.retried' })).toEqual([]);
  });

  it('lists only events created after created_after', async () => {
    expect(await list('acct_a', 'test', { createdAfter: minutesAgo(15) })).toEqual(['evt_4', 'evt_3']);
    expect(await list('acct_a', 'test', { createdAfter: minutesAgo(15), type: 'dispatch.completed' })).toEqual(['evt_4']);
  });

  it('keeps accounts and modes apart', async () => {
    expect(await list('acct_a', 'live')).toEqual(['evt_5']);
    expect(await list('acct_b', 'test', { type: 'dispatch.completed' })).toEqual(['evt_6']);
    expect(await list('acct_b', 'live')).toEqual([]);
  });

  it('reads one event in the webhook shape, and no other account’s or mode’s', async () => {
    expect(await queries.get({ caller: caller('acct_a', 'test'), id: 'evt_2' })).toEqual({
      ok: true,
      value: { id: 'evt_2', event: 'dispatch.completed', timestamp: expect.any(String), data: { dispatch_id: 'dsp_evt_2' } },
    });
    for (const [account, mode] of [
      ['acct_b', 'test'],
      ['acct_a', 'live'],
    ] as const) {
      expect(await queries.get({ caller: caller(account, mode), id: 'evt_2' })).toMatchObject({ ok: false, error: { code: 'resource_missing' } });
    }
  });
});
