import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { sqliteQueryPlan } from '@campaign-ops/testing/read-store';
import { EndpointStore, EndpointView } from './endpoint-store';

describe('the webhook endpoints read model on SQLite', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'endpoint-store-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("serves the fan-out's read of every partner event (an account's endpoints of a mode) by one compound index, before SQLite has statistics", async () => {
    const file = join(dir, 'read-models.sqlite');
    const events = SqliteEventStore.open(':memory:');
    const reads = SqliteReadStore.open(file);
    const store = new EndpointStore(events, reads);
    for (let i = 0; i < 40; i++)
      await store.views.upsert({ id: `whk_${i}`, account_id: `acct_${i % 8}`, mode: 'test', enabled: true, deleted: false } as unknown as EndpointView, 1);
    expect(sqliteQueryPlan(file, 'webhook_endpoints', { account_id: 'acct_1', mode: 'test', enabled: true, deleted: false })).toContain(
      'USING INDEX ix:webhook_endpoints:account_id+mode (',
    );
    await reads.close();
    await events.close();
  });
});
