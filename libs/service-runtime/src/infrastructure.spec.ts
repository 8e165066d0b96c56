import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { connectWithRetry, openStores } from './infrastructure';
import { ConfigError, loadConfig } from './config';

/** A connection that counts how it is used. */
class FakeConnection {
  closed = 0;
  async ping(): Promise<void> {}
  async close(): Promise<void> {
    this.closed++;
  }
}

describe('connectWithRetry', () => {
  it('closes a connection that arrives after its attempt gave up', async () => {
    const late = new FakeConnection();
    const timely = new FakeConnection();
    let attempts = 0;
    const connected = await connectWithRetry('Thing', 'THING_URL', 1_000, (): Promise<FakeConnection> => {
      attempts++;
      // The first attempt answers only after the whole budget; the second at once.
      return attempts === 1 ? new Promise((resolve) => setTimeout(() => resolve(late), 1_200)) : Promise.resolve(timely);
    }).catch((error) => error);
    // Within 1 s the first attempt never answered: the start fails, naming the variable.
    expect(connected).toBeInstanceOf(ConfigError);
    expect((connected as Error).message).toMatch(/^THING_URL points at Thing, which did not answer within 1 s/);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(late.closed).toBe(1);
  });

  it('closes a connection whose ping failed before trying again', async () => {
    const dead = new FakeConnection();
    dead.ping = () => Promise.reject(new Error('not primary'));
    const good = new FakeConnection();
    const connections = [dead, good];
    const connected = await connectWithRetry('Thing', 'THING_URL', 5_000, async () => connections.shift()!);
    expect(connected).toBe(good);
    expect(dead.closed).toBe(1);
    expect(good.closed).toBe(0);
  });
});

describe('openStores, embedded', () => {
  it("commits the standalone process's appends in a writer thread, and another app's on the store's connection", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'stores-'));
    try {
      for (const [app, inThread] of [
        ['standalone', true],
        ['dispatch-service', false],
      ] as const) {
        const stores = await openStores(loadConfig(app, { DATA_DIR: join(dataDir, app) }));
        try {
          expect(stores.eventStore).toBeInstanceOf(SqliteEventStore);
          expect((stores.eventStore as SqliteEventStore).appendsInThread).toBe(inThread);
          await stores.eventStore.append('s-1', [{ id: '0190a0a0-0000-7000-8000-000000000001', type: 'T', data: {} }], { expectedRevision: 'no_stream' });
        } finally {
          await stores.eventStore.close();
          await stores.readStore.close();
        }
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
