import type { MongoClient } from 'mongodb';
import { MongoReadStore } from './mongo-read-store';

/**
 * A MongoDB whose first createIndexes fails, as one does when the primary steps down during the
 * build or the call times out: the driver does not retry it. Only what the store calls is faked.
 */
function flakyMongo(failures: number) {
  const calls: string[] = [];
  let left = failures;
  const collection = {
    createIndex: async (key: Record<string, number>) => {
      calls.push(Object.keys(key)[0]);
      if (left-- > 0) throw Object.assign(new Error('PrimarySteppedDown: not primary'), { code: 189 });
      return `${Object.keys(key)[0]}_1__id_1`;
    },
    countDocuments: async () => 0,
  };
  const db = { databaseName: 'campaign_ops', collection: () => collection, command: async () => ({ ok: 1 }) };
  const client = { db: () => db } as unknown as MongoClient;
  return { client, calls };
}

describe('MongoReadStore index builds that fail', () => {
  afterEach(() => jest.useRealTimers());

  it('builds a failed index again at a later readiness check, and is ready once it exists', async () => {
    const { client, calls } = flakyMongo(1);
    const store = MongoReadStore.fromClient(client);
    const items = store.collection('deliveries', { indexes: ['status'] });
    await expect(store.ping()).rejects.toThrow(/creating read store indexes failed: deliveries\.status: PrimarySteppedDown/);
    // Reported once to a caller of the collection too, as before.
    await expect(items.count({})).rejects.toThrow(/creating read store indexes failed/);
    await expect(items.count({})).resolves.toBe(0);

    // Not at once (a node that is down is not asked every few milliseconds)...
    await expect(store.ping()).rejects.toThrow(/creating read store indexes failed/);
    expect(calls).toEqual(['status']);
    // ...but after its backoff, at the next readiness check: then the app is ready.
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    await expect(store.ping()).resolves.toBeUndefined();
    expect(calls).toEqual(['status', 'status']);
    await expect(items.count({})).resolves.toBe(0);
  });

  it('backs off, doubling, while the build keeps failing, and reports a repeated failure to callers only once', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { client, calls } = flakyMongo(3);
    const store = MongoReadStore.fromClient(client);
    const items = store.collection('deliveries', { indexes: ['status'] });
    await expect(store.ping()).rejects.toThrow(/indexes failed/);
    await expect(items.count({})).rejects.toThrow(/indexes failed/);
    const tries = async (ms: number) => {
      jest.advanceTimersByTime(ms);
      await store.ping().catch(() => undefined);
      return calls.length;
    };
    expect(await tries(999)).toBe(1);
    expect(await tries(1)).toBe(2); // 1 s after the first failure
    expect(await tries(1_999)).toBe(2);
    expect(await tries(1)).toBe(3); // then 2 s
    await expect(items.count({})).resolves.toBe(0);
    expect(await tries(4_000)).toBe(4); // then 4 s: this one succeeds
    await expect(store.ping()).resolves.toBeUndefined();
  });
});
