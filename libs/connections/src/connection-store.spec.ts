import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { sqliteQueryPlan } from '@campaign-ops/testing/read-store';
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
});
