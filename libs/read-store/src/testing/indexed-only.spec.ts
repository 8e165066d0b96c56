import { SqliteReadStore } from '../sqlite-read-store';
import { indexedOnly } from './indexed-only';

describe('indexedOnly', () => {
  let reads: SqliteReadStore;
  beforeEach(() => {
    reads = SqliteReadStore.open(':memory:');
  });
  afterEach(() => reads.close());

  it('answers queries on id and on declared fields, and refuses the others as a scan', async () => {
    const items = indexedOnly(reads).collection<{ id: string; status: string; n: number }>('items', { indexes: ['status'] });
    await items.insert({ id: 'a', status: 'pending', n: 1 });
    await expect(items.find({ status: 'pending' })).resolves.toEqual({ items: [{ id: 'a', status: 'pending', n: 1 }], hasMore: false });
    await expect(items.count({ id: 'a', n: 1 })).resolves.toBe(1);
    await expect(items.claim({ status: 'pending', n: { $lt: 5 } }, { n: 2 })).resolves.toEqual({ id: 'a', status: 'pending', n: 2 });
    await expect(items.find({ n: 2 })).rejects.toThrow('find on items by ["n"] is served by no index (declared: ["id","status"])');
    await expect(items.count({})).rejects.toThrow('count on items by [] is served by no index');
    await expect(items.claim({ n: 2 }, { n: 3 })).rejects.toThrow('claim on items by ["n"]');
    await expect(items.get('a')).resolves.toEqual({ id: 'a', status: 'pending', n: 2 });
  });

  it('counts the indexes another caller declared on the same collection', async () => {
    const store = indexedOnly(reads);
    const plain = store.collection<{ id: string; n: number }>('items');
    await expect(plain.find({ n: 1 })).rejects.toThrow('served by no index');
    store.collection('items', { indexes: ['n'] });
    await expect(plain.find({ n: 1 })).resolves.toEqual({ items: [], hasMore: false });
  });
});
