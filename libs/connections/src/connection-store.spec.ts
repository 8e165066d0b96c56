import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { sqliteQueryPlan } from '@campaign-ops/testing/read-store';
import { ConnectionQueries, RESOLVE_PAGE } from './connection-queries';
import { ConnectionStore, ConnectionView } from './connection-store';

describe('the connections read model on SQLite', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'connection-store-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("serves every launch's read (a channel's connection of an account and mode) by one compound index, before SQLite has statistics", async () => {
    const file = join(dir, 'read-models.sqlite');
    const events = SqliteEventStore.open(':memory:');
    const reads = SqliteReadStore.open(file);
    const store = new ConnectionStore(events, reads);
    for (let i = 0; i < 40; i++)
      await store.views.upsert(
        { id: `con_${i}`, account_id: `acct_${i % 8}`, mode: 'live', channel: 'meta_ads', status: 'active' } as unknown as ConnectionView,
        1,
      );
    const scope = { account_id: 'acct_1', mode: 'live', channel: 'meta_ads' };
    for (const status of [{ $in: ['active', 'reauth_required'] }, 'pending'])
      expect(sqliteQueryPlan(file, 'connections', { ...scope, status })).toContain('USING INDEX ix:connections:account_id+mode+channel (');
    await reads.close();
    await events.close();
  });

  it('resolves with one read: the held connection over newer pending ones, else the newest pending, also past a page of pending ones', async () => {
    const events = SqliteEventStore.open(':memory:');
    const reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
    const store = new ConnectionStore(events, reads);
    const queries = new ConnectionQueries(store);
    const finds = jest.spyOn(store.views, 'find');
    const put = (id: string, status: string) =>
      store.views.upsert({ id, account_id: 'acct_1', mode: 'live', channel: 'meta_ads', status } as unknown as ConnectionView, 1);
    const resolve = () => queries.resolve({ accountId: 'acct_1', mode: 'live', channel: 'meta_ads' });

    await put('con_001', 'pending');
    await put('con_002', 'pending');
    expect(await resolve()).toEqual({ connection: { id: 'con_002', status: 'pending' } });
    await put('con_003', 'revoked');
    await put('con_004', 'reauth_required');
    await put('con_005', 'pending');
    expect(await resolve()).toEqual({ connection: { id: 'con_004', status: 'reauth_required' } });
    expect(finds).toHaveBeenCalledTimes(2);

    // More pending ones than a page, all newer than the held one: it is asked for apart.
    for (let i = 0; i < RESOLVE_PAGE; i++) await put(`con_1${String(i).padStart(2, '0')}`, 'pending');
    finds.mockClear();
    expect(await resolve()).toEqual({ connection: { id: 'con_004', status: 'reauth_required' } });
    expect(finds).toHaveBeenCalledTimes(2);
    await reads.close();
    await events.close();
  });
});
