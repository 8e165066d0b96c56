import { randomBytes } from 'node:crypto';
import { LeaseLostError, type Collection, type CollectionOptions, type Doc, type Filter, type ReadStore } from '../read-store.port';

/**
 * The behaviour every read store adapter must have, written against the port only so that each
 * adapter's spec runs the same suite: `readStoreContract('sqlite', () => ...)`.
 *
 * One store is opened for the whole suite and every test works in collections (and checkpoint
 * names) of its own with a random suffix, so the suite can run against a shared server without
 * cleaning up between tests. `cleanup`, if given, runs before the store is closed (to drop what
 * the suite created, for instance).
 */
export function readStoreContract(name: string, open: () => Promise<ReadStore>, cleanup?: (store: ReadStore) => Promise<void>): void {
  describe(`ReadStore contract: ${name}`, () => {
    let store: ReadStore;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      if (!store) return;
      try {
        await cleanup?.(store);
      } finally {
        await store.close();
      }
    });

    const unique = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;
    const fresh = <T extends Doc = Item>(options?: CollectionOptions): Collection<T> => store.collection<T>(unique('contract'), options);

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    describe('documents', () => {
      it('get of a missing id is null', async () => {
        await expect(fresh().get(docId(1))).resolves.toBeNull();
      });

      it('upsert creates a missing document and records its revision', async () => {
        const items = fresh();
        const doc = item(1, { status: 'pending', n: 1 });
        await expect(items.upsert(doc, 0)).resolves.toBe(true);
        await expect(items.get(doc.id)).resolves.toStrictEqual(doc);
        await expect(items.revisionOf(doc.id)).resolves.toBe(0);
      });

      it('upsert with a higher revision replaces the whole document', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'pending', n: 1, note: 'dropped later' }), 1);
        const next = item(1, { status: 'done', n: 2 });
        await expect(items.upsert(next, 4)).resolves.toBe(true);
        await expect(items.get(next.id)).resolves.toStrictEqual(next);
        await expect(items.revisionOf(next.id)).resolves.toBe(4);
      });

      it('upsert with an equal revision (a replay) changes nothing and returns false', async () => {
        const items = fresh();
        const stored = item(1, { status: 'pending' });
        await items.upsert(stored, 3);
        await expect(items.upsert(item(1, { status: 'replayed' }), 3)).resolves.toBe(false);
        await expect(items.get(stored.id)).resolves.toStrictEqual(stored);
        await expect(items.revisionOf(stored.id)).resolves.toBe(3);
      });

      it('upsert with a lower revision (a stale event) changes nothing and returns false', async () => {
        const items = fresh();
        const stored = item(1, { status: 'done' });
        await items.upsert(stored, 5);
        await expect(items.upsert(item(1, { status: 'stale' }), 2)).resolves.toBe(false);
        await expect(items.upsert(item(1, { status: 'stale' }), 0)).resolves.toBe(false);
        await expect(items.get(stored.id)).resolves.toStrictEqual(stored);
        await expect(items.revisionOf(stored.id)).resolves.toBe(5);
      });

      it('revisionOf a missing id is null', async () => {
        await expect(fresh().revisionOf(docId(1))).resolves.toBeNull();
      });

      it('insert stores only when the id is absent', async () => {
        const items = fresh();
        const first = item(1, { status: 'pending' });
        await expect(items.insert(first)).resolves.toBe(true);
        await expect(items.insert(item(1, { status: 'other' }))).resolves.toBe(false);
        await expect(items.get(first.id)).resolves.toStrictEqual(first);
      });

      it('insert does not overwrite an upserted document', async () => {
        const items = fresh();
        const projected = item(1, { status: 'projected' });
        await items.upsert(projected, 2);
        await expect(items.insert(item(1, { status: 'inserted' }))).resolves.toBe(false);
        await expect(items.get(projected.id)).resolves.toStrictEqual(projected);
        await expect(items.revisionOf(projected.id)).resolves.toBe(2);
      });

      it('delete removes a document and says whether there was one', async () => {
        const items = fresh();
        await items.upsert(item(1), 7);
        await items.upsert(item(2), 0);
        await expect(items.delete(docId(1))).resolves.toBe(true);
        await expect(items.get(docId(1))).resolves.toBeNull();
        await expect(items.revisionOf(docId(1))).resolves.toBeNull();
        await expect(items.delete(docId(1))).resolves.toBe(false);
        await expect(items.get(docId(2))).resolves.toStrictEqual(item(2));
      });

      it('forgets the revision of a deleted document', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'old' }), 7);
        await items.delete(docId(1));
        await expect(items.upsert(item(1, { status: 'new' }), 0)).resolves.toBe(true);
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { status: 'new' }));
      });

      it('keeps collections apart', async () => {
        const a = fresh();
        const b = fresh();
        await a.upsert(item(1, { status: 'in a' }), 1);
        await expect(b.get(docId(1))).resolves.toBeNull();
        await expect(b.upsert(item(1, { status: 'in b' }), 0)).resolves.toBe(true);
        await expect(a.get(docId(1))).resolves.toStrictEqual(item(1, { status: 'in a' }));
        await expect(b.count({})).resolves.toBe(1);
      });

      it('round-trips documents exactly, nested objects, arrays and unicode included', async () => {
        const items = fresh();
        const doc: Item = {
          id: docId(1),
          text: 'héllo wörld — 日本語 🚀 "quoted" \\ back\\slash\nnew line\ttab',
          empty: '',
          zero: 0,
          negative: -42,
          float: 3.14159,
          big: Number.MAX_SAFE_INTEGER,
          yes: true,
          no: false,
          nothing: null,
          list: [1, 'two', { three: [3] }, null, true, []],
          nested: { a: { b: { c: 'deep', emoji: '👍🏽' } }, empty: {} },
        };
        await items.upsert(doc, 0);
        await expect(items.get(doc.id)).resolves.toStrictEqual(doc);
        await expect(items.find({})).resolves.toStrictEqual({ items: [doc], hasMore: false });

        const inserted = { ...doc, id: docId(2) };
        await items.insert(inserted);
        await expect(items.get(inserted.id)).resolves.toStrictEqual(inserted);
      });
    });

    describe('update', () => {
      it('merges top-level fields and returns the updated document', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'pending', n: 1, nested: { keep: true } }), 0);
        const updated = await items.update(docId(1), { status: 'done', attempts: 2 });
        const expected = item(1, { status: 'done', n: 1, nested: { keep: true }, attempts: 2 });
        expect(updated).toStrictEqual(expected);
        await expect(items.get(docId(1))).resolves.toStrictEqual(expected);
      });

      it('replaces a nested object as a whole (the merge is top-level only)', async () => {
        const items = fresh();
        await items.upsert(item(1, { nested: { a: 1, b: 2 } }), 0);
        await expect(items.update(docId(1), { nested: { c: 3 } })).resolves.toStrictEqual(item(1, { nested: { c: 3 } }));
      });

      it('leaves undefined fields unchanged and stores null', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'pending', note: 'keep me', tag: 'x' }), 0);
        const updated = await items.update(docId(1), { note: undefined, tag: null });
        const expected = item(1, { status: 'pending', note: 'keep me', tag: null });
        expect(updated).toStrictEqual(expected);
        await expect(items.get(docId(1))).resolves.toStrictEqual(expected);
      });

      it('returns null for a missing id and creates nothing', async () => {
        const items = fresh();
        await expect(items.update(docId(1), { status: 'done' })).resolves.toBeNull();
        await expect(items.get(docId(1))).resolves.toBeNull();
      });

      it('applies the patch when the document matches where', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'pending', attempts: 1 }), 0);
        await expect(items.update(docId(1), { status: 'sent' }, { status: 'pending', attempts: { $lt: 3 } })).resolves.toStrictEqual(
          item(1, { status: 'sent', attempts: 1 }),
        );
      });

      it('changes nothing and returns null when where does not match (compare-and-set)', async () => {
        const items = fresh();
        const stored = item(1, { status: 'sent', attempts: 1 });
        await items.upsert(stored, 0);
        await expect(items.update(docId(1), { status: 'failed' }, { status: 'pending' })).resolves.toBeNull();
        await expect(items.update(docId(1), { status: 'failed' }, { attempts: { $gte: 2 } })).resolves.toBeNull();
        await expect(items.get(docId(1))).resolves.toStrictEqual(stored);
      });

      it('only the first of two racing compare-and-sets wins', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'pending' }), 0);
        const results = await Promise.all(['a', 'b', 'c'].map((by) => items.update(docId(1), { status: 'taken', by }, { status: 'pending' })));
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        await expect(items.get(docId(1))).resolves.toStrictEqual(winners[0]);
      });

      it('keeps the revision, so replays of the projected event still change nothing', async () => {
        const items = fresh();
        await items.upsert(item(1, { status: 'pending' }), 5);
        await items.update(docId(1), { status: 'sent' });
        await expect(items.revisionOf(docId(1))).resolves.toBe(5);
        await expect(items.upsert(item(1, { status: 'pending' }), 5)).resolves.toBe(false);
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { status: 'sent' }));
      });
    });

    describe('claim', () => {
      it('picks the oldest matching document by id, patches it and returns it', async () => {
        const items = fresh({ indexes: ['status'] });
        // Inserted out of order, so that insertion order cannot pass for id order.
        for (const i of [3, 1, 4, 2]) await items.insert(item(i, { status: i === 1 ? 'done' : 'pending' }));
        await expect(items.claim({ status: 'pending' }, { status: 'claimed' })).resolves.toStrictEqual(item(2, { status: 'claimed' }));
        await expect(items.claim({ status: 'pending' }, { status: 'claimed' })).resolves.toStrictEqual(item(3, { status: 'claimed' }));
        await expect(items.get(docId(2))).resolves.toStrictEqual(item(2, { status: 'claimed' }));
        await expect(items.count({ status: 'pending' })).resolves.toBe(1);
      });

      it('orders by another field when asked', async () => {
        const items = fresh({ indexes: ['status', 'dueAt'] });
        await items.insert(item(1, { status: 'pending', dueAt: 300 }));
        await items.insert(item(2, { status: 'pending', dueAt: 100 }));
        await items.insert(item(3, { status: 'pending', dueAt: 200 }));
        await items.insert(item(4, { status: 'pending', dueAt: 50, held: true }));
        const claimed = await items.claim({ status: 'pending', held: null }, { status: 'claimed' }, 'dueAt');
        expect(claimed).toStrictEqual(item(2, { status: 'claimed', dueAt: 100 }));
        await expect(items.claim({ status: 'pending', dueAt: { $lte: 250 }, held: null }, { status: 'claimed' }, 'dueAt')).resolves.toStrictEqual(
          item(3, { status: 'claimed', dueAt: 200 }),
        );
      });

      it('claims through a compound index: equality on its first field, range and order on its last', async () => {
        const items = fresh({ indexes: ['status', ['owner', 'dueAt']] });
        await items.insert(item(1, { status: 'pending', owner: 'a', dueAt: 300 }));
        await items.insert(item(2, { status: 'pending', owner: 'b', dueAt: 100 }));
        await items.insert(item(3, { status: 'pending', owner: 'a', dueAt: 200 }));
        await items.insert(item(4, { status: 'done', owner: 'a', dueAt: null }));
        const due = { owner: 'a', status: 'pending', dueAt: { $lte: 250 } };
        await expect(items.claim(due, { status: 'claimed' }, 'dueAt')).resolves.toStrictEqual(item(3, { status: 'claimed', owner: 'a', dueAt: 200 }));
        await expect(items.claim(due, { status: 'claimed' }, 'dueAt')).resolves.toBeNull();
      });

      it('returns null when nothing matches', async () => {
        const items = fresh();
        await expect(items.claim({ status: 'pending' }, { status: 'claimed' })).resolves.toBeNull();
        await items.insert(item(1, { status: 'done' }));
        await expect(items.claim({ status: 'pending' }, { status: 'claimed' })).resolves.toBeNull();
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { status: 'done' }));
      });

      it('gives every document to exactly one of many concurrent claimers', async () => {
        const items = fresh({ indexes: ['status'] });
        const total = 50;
        for (let i = 1; i <= total; i++) await items.insert(item(i, { status: 'pending' }));

        const claimer = async (worker: string): Promise<Item[]> => {
          const claimed: Item[] = [];
          for (;;) {
            const doc = await items.claim({ status: 'pending' }, { status: 'claimed', by: worker });
            if (!doc) return claimed;
            claimed.push(doc);
          }
        };
        const workers = Array.from({ length: 10 }, (_, w) => `worker-${w}`);
        const results = await Promise.all(workers.map(claimer));

        const ids = results.flat().map((doc) => doc.id);
        expect(ids).toHaveLength(total);
        expect(new Set(ids).size).toBe(total);
        for (const [w, claimed] of results.entries()) {
          for (const doc of claimed) {
            expect(doc).toStrictEqual(item(Number(doc.id.slice(4)), { status: 'claimed', by: workers[w] }));
            await expect(items.get(doc.id)).resolves.toStrictEqual(doc);
          }
        }
        await expect(items.count({ status: 'pending' })).resolves.toBe(0);
      });
    });

    describe.each([
      ['with indexes', ['status', 'n', 'flag', 'note', 'tag']],
      ['without indexes', []],
    ])('filters (%s)', (_label, indexes) => {
      let items: Collection<Item>;

      beforeAll(async () => {
        items = fresh({ indexes });
        // Same field names with values of other types, to check that filters compare like with like.
        await items.insert(item(1, { status: 'pending', n: 1, flag: true, tag: 'x', note: null }));
        await items.insert(item(2, { status: 'done', n: 2, flag: false, tag: 'y' }));
        await items.insert(item(3, { status: 'pending', n: 3, flag: true, note: 'hi' }));
        await items.insert(item(4, { status: 'failed', n: 10, flag: false, tag: 'x', note: null }));
        await items.insert(item(5, { status: 'pending', n: '3', flag: 1, tag: 'z' }));
        await items.insert(item(6, { status: 'queued', n: 2.5, flag: 0, tag: '' }));
      });

      const cases: [string, Filter, number[]][] = [
        ['an empty filter matches everything', {}, [1, 2, 3, 4, 5, 6]],
        ['equality on a string', { status: 'pending' }, [1, 3, 5]],
        ['equality on an empty string', { tag: '' }, [6]],
        ['equality on a number matches numbers only', { n: 3 }, [3]],
        ['equality on a float', { n: 2.5 }, [6]],
        ['equality on a numeric string matches strings only', { n: '3' }, [5]],
        ['equality on true matches booleans, not 1', { flag: true }, [1, 3]],
        ['equality on false matches booleans, not 0', { flag: false }, [2, 4]],
        ['equality on 1 matches numbers, not true', { flag: 1 }, [5]],
        ['equality on null matches null and missing fields', { note: null }, [1, 2, 4, 5, 6]],
        ['equality on a field no document has', { nowhere: 'x' }, []],
        ['equality on null for a field no document has', { nowhere: null }, [1, 2, 3, 4, 5, 6]],
        ['$gte and $lte on numbers', { n: { $gte: 2, $lte: 10 } }, [2, 3, 4, 6]],
        ['$gt and $lt on numbers', { n: { $gt: 1, $lt: 10 } }, [2, 3, 6]],
        ['a number range skips strings', { n: { $gte: 0 } }, [1, 2, 3, 4, 6]],
        ['a string range skips numbers', { n: { $lt: 'z' } }, [5]],
        ['a range on strings compares them as strings', { status: { $gte: 'e', $lt: 'p' } }, [4]],
        ['$in on strings', { status: { $in: ['done', 'failed'] } }, [2, 4]],
        ['$in with mixed types matches each by its type', { n: { $in: [1, 10, '3'] } }, [1, 4, 5]],
        ['$in on booleans', { flag: { $in: [false] } }, [2, 4]],
        ['$in with null matches null and missing fields', { note: { $in: [null, 'hi'] } }, [1, 2, 3, 4, 5, 6]],
        ['an empty $in matches nothing', { status: { $in: [] } }, []],
        ['combined conditions all apply', { status: 'pending', flag: true, n: { $lte: 2 } }, [1]],
        ['combined equality and $in', { tag: 'x', status: { $in: ['pending', 'done'] } }, [1]],
        ['$in on id', { id: { $in: [docId(2), docId(5), docId(99)] } }, [2, 5]],
        ['a range on id', { id: { $gt: docId(4) } }, [5, 6]],
      ];

      it.each(cases)('%s', async (_description, where, expected) => {
        const found = await items.find(where, { order: 'asc', limit: 100 });
        expect(found.items.map((doc) => doc.id)).toEqual(expected.map(docId));
        expect(found.hasMore).toBe(false);
        await expect(items.count(where)).resolves.toBe(expected.length);
      });
    });

    describe('find', () => {
      const seed = async (total: number, fields: (i: number) => Record<string, unknown> = () => ({})): Promise<Collection<Item>> => {
        const items = fresh({ indexes: ['status'] });
        // Shuffled inserts: ordering must come from the ids, not from the insertion order.
        const order = Array.from({ length: total }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
        for (const i of order) await items.insert(item(i, fields(i)));
        return items;
      };
      const range = (from: number, to: number) => Array.from({ length: Math.abs(to - from) + 1 }, (_, k) => docId(from <= to ? from + k : from - k));

      it('lists newest first, 20 by default', async () => {
        const items = await seed(25);
        const page = await items.find({});
        expect(page.items.map((doc) => doc.id)).toEqual(range(25, 6));
        expect(page.hasMore).toBe(true);
      });

      it('lists oldest first with order asc', async () => {
        const items = await seed(8);
        const page = await items.find({}, { order: 'asc' });
        expect(page.items.map((doc) => doc.id)).toEqual(range(1, 8));
        expect(page.hasMore).toBe(false);
      });

      it('honours limit, and hasMore is false when exactly limit documents remain', async () => {
        const items = await seed(5);
        await expect(items.find({}, { limit: 3 })).resolves.toMatchObject({ hasMore: true });
        expect((await items.find({}, { limit: 3 })).items.map((doc) => doc.id)).toEqual(range(5, 3));
        await expect(items.find({}, { limit: 5 })).resolves.toMatchObject({ hasMore: false });
        await expect(items.find({}, { limit: 1000 })).resolves.toMatchObject({ hasMore: false });
        expect((await items.find({}, { limit: 1 })).items.map((doc) => doc.id)).toEqual([docId(5)]);
      });

      it('returns an empty page from an empty collection', async () => {
        await expect(fresh().find({})).resolves.toStrictEqual({ items: [], hasMore: false });
      });

      it.each([0, 1001, 2.5, -1])('rejects limit %p', async (limit) => {
        await expect(fresh().find({}, { limit })).rejects.toThrow();
      });

      it.each([
        ['desc', 23, 5],
        ['asc', 23, 5],
        ['desc', 20, 5],
        ['asc', 20, 5],
      ] as const)('pages %s through %i documents %i at a time, every document exactly once', async (order, total, limit) => {
        const items = await seed(total);
        const seen: string[] = [];
        const hasMore: boolean[] = [];
        let startingAfter: string | undefined;
        for (let guard = 0; guard < total; guard++) {
          const page = await items.find({}, { order, limit, startingAfter });
          seen.push(...page.items.map((doc) => doc.id));
          hasMore.push(page.hasMore);
          if (!page.hasMore) break;
          startingAfter = page.items[page.items.length - 1].id;
        }
        expect(seen).toEqual(order === 'desc' ? range(total, 1) : range(1, total));
        const pages = Math.ceil(total / limit);
        expect(hasMore).toEqual([...Array<boolean>(pages - 1).fill(true), false]);
      });

      it('pages through a filtered list', async () => {
        const items = await seed(30, (i) => ({ status: i % 3 === 0 ? 'done' : 'pending' }));
        const first = await items.find({ status: 'done' }, { limit: 4 });
        expect(first.items.map((doc) => doc.id)).toEqual([30, 27, 24, 21].map(docId));
        expect(first.hasMore).toBe(true);
        const second = await items.find({ status: 'done' }, { limit: 4, startingAfter: docId(21) });
        expect(second.items.map((doc) => doc.id)).toEqual([18, 15, 12, 9].map(docId));
        const last = await items.find({ status: 'done' }, { limit: 4, startingAfter: docId(9) });
        expect(last).toStrictEqual({ items: [item(6, { status: 'done' }), item(3, { status: 'done' })], hasMore: false });
      });

      it('treats startingAfter as a position, so a deleted cursor document still works', async () => {
        const items = await seed(6);
        await items.delete(docId(4));
        expect((await items.find({}, { startingAfter: docId(4) })).items.map((doc) => doc.id)).toEqual(range(3, 1));
        expect((await items.find({}, { order: 'asc', startingAfter: docId(4) })).items.map((doc) => doc.id)).toEqual(range(5, 6));
        await expect(items.find({}, { startingAfter: docId(1) })).resolves.toStrictEqual({ items: [], hasMore: false });
      });

      it('counts matching documents', async () => {
        const items = await seed(12, (i) => ({ status: i <= 5 ? 'done' : 'pending' }));
        await expect(items.count({})).resolves.toBe(12);
        await expect(items.count({ status: 'done' })).resolves.toBe(5);
        await expect(items.count({ status: 'gone' })).resolves.toBe(0);
        await expect(fresh().count({})).resolves.toBe(0);
      });
    });

    describe('distinct', () => {
      it('gives each value of a field once, among the documents that match', async () => {
        const items = fresh({ indexes: ['status'] });
        const owners = ['a', 'b', 'a', 'c', 'b', 'a'];
        for (const [i, owner] of owners.entries()) await items.insert(item(i + 1, { status: i === 3 ? 'done' : 'pending', owner }));
        expect((await items.distinct('owner', { status: 'pending' }, 100)).sort()).toEqual(['a', 'b']);
        expect((await items.distinct('owner', {}, 100)).sort()).toEqual(['a', 'b', 'c']);
        await expect(items.distinct('owner', { status: 'gone' }, 100)).resolves.toEqual([]);
      });

      it('keeps the kinds of values apart, a missing field counting as null', async () => {
        const items = fresh();
        const values = [true, 1, '1', null, false, true, 1.5];
        for (const [i, value] of values.entries()) await items.insert(item(i + 1, { value }));
        await items.insert(item(99, {}));
        const found = await items.distinct('value', {}, 100);
        expect(found).toHaveLength(6);
        expect(found).toEqual(expect.arrayContaining([true, false, 1, '1', null, 1.5]));
      });

      it('gives at most `limit` values', async () => {
        const items = fresh();
        for (let i = 1; i <= 5; i++) await items.insert(item(i, { owner: `o${i}` }));
        const found = await items.distinct('owner', {}, 3);
        expect(found).toHaveLength(3);
        expect(new Set(found).size).toBe(3);
        await expect(items.distinct('owner', {}, 0)).rejects.toThrow(RangeError);
      });
    });

    describe('read-mostly collections (readMostly: reads may come from memory, and stay exact)', () => {
      const ids = (page: { items: Item[] }) => page.items.map((doc) => doc.id);

      it('sees at once what each kind of write through it committed', async () => {
        const items = fresh({ indexes: ['owner'], readMostly: true });
        const owned = () => items.find({ owner: 'a' }, { order: 'asc' });
        expect(ids(await owned())).toEqual([]);
        await expect(items.get(docId(1))).resolves.toBeNull();

        await items.upsert(item(1, { owner: 'a', v: 1 }), 0);
        expect(ids(await owned())).toEqual([docId(1)]);
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { owner: 'a', v: 1 }));

        await items.insert(item(2, { owner: 'a' }));
        expect(ids(await owned())).toEqual([docId(1), docId(2)]);

        await items.update(docId(1), { v: 2 });
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { owner: 'a', v: 2 }));

        await items.claim({ owner: 'a' }, { owner: 'b' }, 'id');
        expect(ids(await owned())).toEqual([docId(2)]);
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { owner: 'b', v: 2 }));

        await items.upsert(item(2, { owner: 'a', v: 3 }), 1);
        expect((await owned()).items).toStrictEqual([item(2, { owner: 'a', v: 3 })]);

        await items.delete(docId(2));
        expect(ids(await owned())).toEqual([]);
        await expect(items.get(docId(2))).resolves.toBeNull();
      });

      it("answers each caller a copy of its own: one caller's change to a document is not another's", async () => {
        const items = fresh({ indexes: ['owner'], readMostly: true });
        await items.upsert(item(1, { owner: 'a', tags: ['x'] }), 0);
        const [got, found] = [await items.get(docId(1)), (await items.find({ owner: 'a' })).items[0]];
        got!.owner = 'changed';
        (found.tags as string[]).push('y');
        await expect(items.get(docId(1))).resolves.toStrictEqual(item(1, { owner: 'a', tags: ['x'] }));
        expect((await items.find({ owner: 'a' })).items).toStrictEqual([item(1, { owner: 'a', tags: ['x'] })]);
      });

      it('pages by the same rules as any collection', async () => {
        const items = fresh({ readMostly: true });
        for (let i = 1; i <= 3; i++) await items.insert(item(i));
        const first = await items.find({}, { order: 'asc', limit: 2 });
        expect([ids(first), first.hasMore]).toEqual([[docId(1), docId(2)], true]);
        const rest = await items.find({}, { order: 'asc', limit: 2, startingAfter: docId(2) });
        expect([ids(rest), rest.hasMore]).toEqual([[docId(3)], false]);
        expect(ids(await items.find({}, { limit: 1 }))).toEqual([docId(3)]);
      });

      it('sees the contents a rebuild swapped in', async () => {
        const name = unique('rebuilt');
        const live = store.collection<Item>(name, { readMostly: true });
        await live.upsert(item(1, { v: 'old' }), 0);
        await expect(live.get(docId(1))).resolves.toStrictEqual(item(1, { v: 'old' }));
        const rebuild = await store.beginRebuild([{ name }]);
        await rebuild.upsertMany(name, [{ doc: item(1, { v: 'new' }), revision: 0 }]);
        await rebuild.swap();
        await expect(live.get(docId(1))).resolves.toStrictEqual(item(1, { v: 'new' }));
        expect((await live.find({})).items).toStrictEqual([item(1, { v: 'new' })]);
      });
    });

    describe('rebuild (blue/green)', () => {
      const all = async (items: Collection<Item>) => (await items.find({}, { order: 'asc', limit: 1000 })).items;

      it('fills fresh stand-ins while the live collections serve, then swaps them in, with their indexes and the checkpoints', async () => {
        const [name, other, checkpoint] = [unique('rebuilt'), unique('rebuilt'), unique('checkpoint')];
        const live = store.collection<Item>(name, { indexes: ['status'] });
        await live.upsert(item(1, { status: 'old' }), 0);
        await live.upsert(item(2, { status: 'old' }), 0);

        const rebuild = await store.beginRebuild([
          { name, indexes: ['status'] },
          { name: other, indexes: [['status', 'n']] },
        ]);
        await rebuild.upsertMany(name, [
          { doc: item(2, { status: 'new', n: 1 }), revision: 3 },
          { doc: item(3, { status: 'new', n: 2 }), revision: 0 },
        ]);
        await rebuild.collection<Item>(other).upsert(item(7, { status: 'other' }), 1);
        await rebuild.drain();
        // The live collection still serves, and takes writes, until the swap.
        expect(await all(live)).toEqual([item(1, { status: 'old' }), item(2, { status: 'old' })]);
        expect(await all(rebuild.collection<Item>(name))).toEqual([item(2, { status: 'new', n: 1 }), item(3, { status: 'new', n: 2 })]);

        await rebuild.swap(async () => {
          await rebuild.upsertMany(name, [{ doc: item(4, { status: 'new', n: 3 }), revision: 0 }]);
          return { [checkpoint]: '99' };
        });

        // The handle taken before the swap reads the new contents, revisions included, through the indexes.
        expect(await all(live)).toEqual([item(2, { status: 'new', n: 1 }), item(3, { status: 'new', n: 2 }), item(4, { status: 'new', n: 3 })]);
        expect(await live.revisionOf(docId(2))).toBe(3);
        expect((await live.find({ status: 'new' }, { limit: 10 })).items.map((doc) => doc.id)).toEqual([docId(4), docId(3), docId(2)]);
        expect(await all(store.collection<Item>(other))).toEqual([item(7, { status: 'other' })]);
        await expect(store.checkpoints.get(checkpoint)).resolves.toBe('99');
        // The swapped-in collection goes on as any other: guarded upserts, new documents.
        await expect(live.upsert(item(2, { status: 'stale' }), 3)).resolves.toBe(false);
        await expect(live.upsert(item(5, { status: 'new' }), 0)).resolves.toBe(true);
        await expect(rebuild.swap()).rejects.toThrow(/already swapped in/);
      });

      it('upsertMany is guarded by revision like upsert, within one call and across calls', async () => {
        const name = unique('rebuilt');
        const rebuild = await store.beginRebuild([{ name }]);
        await rebuild.upsertMany(name, [
          { doc: item(1, { v: 'second' }), revision: 2 },
          { doc: item(1, { v: 'first' }), revision: 1 },
        ]);
        await rebuild.upsertMany(name, [
          { doc: item(1, { v: 'replay' }), revision: 2 },
          { doc: item(2, { v: 'only' }), revision: 0 },
        ]);
        await rebuild.drain();
        expect(await all(rebuild.collection<Item>(name))).toEqual([item(1, { v: 'second' }), item(2, { v: 'only' })]);
        await rebuild.discard();
      });

      it('leaves the live collections and checkpoints as they were when lastly fails, or when discarded', async () => {
        const [name, checkpoint] = [unique('rebuilt'), unique('checkpoint')];
        const live = store.collection<Item>(name);
        await live.upsert(item(1, { v: 'live' }), 0);
        await store.checkpoints.set(checkpoint, '5');

        const failing = await store.beginRebuild([{ name }]);
        await failing.upsertMany(name, [{ doc: item(9, { v: 'rebuilt' }), revision: 0 }]);
        await expect(
          failing.swap(async () => {
            throw new Error('the event store went away');
          }),
        ).rejects.toThrow('the event store went away');
        await failing.discard();
        expect(await all(live)).toEqual([item(1, { v: 'live' })]);
        await expect(store.checkpoints.get(checkpoint)).resolves.toBe('5');

        const discarded = await store.beginRebuild([{ name }]);
        await discarded.upsertMany(name, [{ doc: item(9, { v: 'rebuilt' }), revision: 0 }]);
        await discarded.discard();
        expect(await all(live)).toEqual([item(1, { v: 'live' })]);
        await expect(discarded.upsertMany(name, [])).rejects.toThrow(/discarded/);
      });

      it('swaps in an empty collection when nothing was written, and creates a collection that did not exist', async () => {
        const [emptied, created] = [unique('rebuilt'), unique('rebuilt')];
        await store.collection<Item>(emptied).upsert(item(1), 0);
        const rebuild = await store.beginRebuild([{ name: emptied }, { name: created }]);
        await rebuild.upsertMany(created, [{ doc: item(1, { n: 1 }), revision: 0 }]);
        await rebuild.swap();
        expect(await all(store.collection<Item>(emptied))).toEqual([]);
        expect(await all(store.collection<Item>(created))).toEqual([item(1, { n: 1 })]);
      });

      it('refuses names that are not collections, a name twice, another rebuild’s stand-in', async () => {
        await expect(store.beginRebuild([])).rejects.toThrow(/at least one/);
        await expect(store.beginRebuild([{ name: 'Bad-Name' }])).rejects.toThrow(/invalid collection name/);
        const name = unique('rebuilt');
        await expect(store.beginRebuild([{ name }, { name }])).rejects.toThrow(/once/);
        expect(() => store.collection(`${name}__rebuild_1`)).toThrow(/rebuild in progress/);
        const rebuild = await store.beginRebuild([{ name }]);
        expect(() => rebuild.collection(unique('other'))).toThrow(/not part of this rebuild/);
        await rebuild.discard();
      });
    });

    describe('checkpoints', () => {
      it('are undefined until set', async () => {
        await expect(store.checkpoints.get(unique('checkpoint'))).resolves.toBeUndefined();
      });

      it('store a position and overwrite it', async () => {
        const name = unique('checkpoint');
        await store.checkpoints.set(name, '42');
        await expect(store.checkpoints.get(name)).resolves.toBe('42');
        await store.checkpoints.set(name, '1337');
        await expect(store.checkpoints.get(name)).resolves.toBe('1337');
      });

      it('keep names apart and positions verbatim', async () => {
        const a = unique('checkpoint');
        const b = unique('checkpoint');
        const position = 'C:0000012345/P:0000012345';
        await store.checkpoints.set(a, position);
        await store.checkpoints.set(b, '0');
        await expect(store.checkpoints.get(a)).resolves.toBe(position);
        await expect(store.checkpoints.get(b)).resolves.toBe('0');
      });
    });

    describe('processor leases', () => {
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

      it('go to the first taker; another holder gets null while it lasts, and takes it over once it expired, with a higher epoch', async () => {
        const name = unique('lease');
        await expect(store.checkpoints.lease(name)).resolves.toBeNull();
        const first = await store.checkpoints.acquireLease(name, 'a', 300);
        expect(first).toMatchObject({ holder: 'a', epoch: expect.any(Number) });
        expect(first!.expiresAt.getTime()).toBeGreaterThan(Date.now() - 1000);
        await expect(store.checkpoints.acquireLease(name, 'b', 300)).resolves.toBeNull();
        await expect(store.checkpoints.lease(name)).resolves.toMatchObject({ holder: 'a', epoch: first!.epoch });
        await sleep(400);
        const second = await store.checkpoints.acquireLease(name, 'b', 300);
        expect(second).toMatchObject({ holder: 'b' });
        expect(second!.epoch).toBeGreaterThan(first!.epoch);
        // The one that lost it can neither renew nor take it back while it lasts.
        await expect(store.checkpoints.renewLease(name, first!, 300)).resolves.toBe(false);
        await expect(store.checkpoints.acquireLease(name, 'a', 300)).resolves.toBeNull();
      });

      it('last as long as they are renewed', async () => {
        const name = unique('lease');
        const held = (await store.checkpoints.acquireLease(name, 'a', 300))!;
        for (let i = 0; i < 4; i++) {
          await sleep(150);
          await expect(store.checkpoints.renewLease(name, held, 300)).resolves.toBe(true);
        }
        await expect(store.checkpoints.acquireLease(name, 'b', 300)).resolves.toBeNull();
        await expect(store.checkpoints.lease(name)).resolves.toMatchObject({ holder: 'a', epoch: held.epoch });
      });

      it('fence checkpoint writes: a holder whose lease was taken over cannot move the checkpoint', async () => {
        const name = unique('lease');
        const old = (await store.checkpoints.acquireLease(name, 'a', 100))!;
        await store.checkpoints.set(name, '10', old);
        await expect(store.checkpoints.get(name)).resolves.toBe('10');
        await sleep(200);
        const current = (await store.checkpoints.acquireLease(name, 'b', 10_000))!;
        await store.checkpoints.set(name, '20', current);
        await expect(store.checkpoints.set(name, '15', old)).rejects.toThrow(LeaseLostError);
        await expect(store.checkpoints.get(name)).resolves.toBe('20');
        // A holder's own write is fenced by the epoch only: expired but not taken, it still holds.
        await expect(store.checkpoints.set(name, '25', { holder: 'b', epoch: current.epoch })).resolves.toBeUndefined();
        await expect(store.checkpoints.set(unique('lease'), '1', current)).rejects.toThrow(LeaseLostError);
      });

      it('are let go at once by release, and taken at once with evenIfHeld', async () => {
        const name = unique('lease');
        const a = (await store.checkpoints.acquireLease(name, 'a', 60_000))!;
        await store.checkpoints.releaseLease(name, a);
        const b = (await store.checkpoints.acquireLease(name, 'b', 60_000))!;
        expect(b.epoch).toBeGreaterThan(a.epoch);
        await store.checkpoints.releaseLease(name, a); // no longer a's: changes nothing
        await expect(store.checkpoints.acquireLease(name, 'c', 60_000)).resolves.toBeNull();
        const c = (await store.checkpoints.acquireLease(name, 'c', 60_000, { evenIfHeld: true }))!;
        expect(c).toMatchObject({ holder: 'c' });
        expect(c.epoch).toBeGreaterThan(b.epoch);
        await expect(store.checkpoints.set(name, '1', b)).rejects.toThrow(LeaseLostError);
      });

      it('are revoked by a reset, which sets or removes the checkpoint in the same step', async () => {
        const name = unique('lease');
        const held = (await store.checkpoints.acquireLease(name, 'a', 60_000))!;
        await store.checkpoints.set(name, '100', held);
        await store.checkpoints.reset(name, '7');
        await expect(store.checkpoints.get(name)).resolves.toBe('7');
        await expect(store.checkpoints.set(name, '101', held)).rejects.toThrow(LeaseLostError);
        await expect(store.checkpoints.renewLease(name, held, 60_000)).resolves.toBe(false);
        const next = (await store.checkpoints.acquireLease(name, 'b', 60_000))!;
        expect(next.epoch).toBeGreaterThan(held.epoch);
        await store.checkpoints.reset(name, undefined);
        await expect(store.checkpoints.get(name)).resolves.toBeUndefined();
        await store.checkpoints.reset(unique('lease'), '3');
      });

      it('keep a checkpoint set without a lease readable, and a lease taken before any checkpoint leaves it undefined', async () => {
        const name = unique('lease');
        await store.checkpoints.acquireLease(name, 'a', 60_000);
        await expect(store.checkpoints.get(name)).resolves.toBeUndefined();
        const other = unique('lease');
        await store.checkpoints.set(other, '5');
        const lease = (await store.checkpoints.acquireLease(other, 'a', 60_000))!;
        await expect(store.checkpoints.get(other)).resolves.toBe('5');
        await store.checkpoints.set(other, '6', lease);
        await expect(store.checkpoints.get(other)).resolves.toBe('6');
      });

      it('give a free lease to exactly one of many concurrent takers', async () => {
        const name = unique('lease');
        const taken = await Promise.all(Array.from({ length: 8 }, (_, i) => store.checkpoints.acquireLease(name, `h${i}`, 60_000)));
        expect(taken.filter((lease) => lease !== null)).toHaveLength(1);
      });
    });
  });
}

type Item = Doc & Record<string, unknown>;

/** Zero-padded, so that string order is numeric order, as with the ULID-based ids in production. */
function docId(i: number): string {
  return `doc_${String(i).padStart(4, '0')}`;
}

function item(i: number, fields: Record<string, unknown> = {}): Item {
  return { id: docId(i), ...fields };
}
