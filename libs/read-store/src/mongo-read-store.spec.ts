import { randomBytes } from 'node:crypto';
import { describeWithContainers } from '@campaign-ops/testing/container-testing';
import { MongoClient, type Db } from 'mongodb';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { databaseNameFromUrl, MongoReadStore } from './mongo-read-store';
import type { Doc } from './read-store.port';
import { readStoreContract } from './testing/read-store.contract';

const unique = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;

// ---------------------------------------------------------------------------------------------
// Without a server: everything the adapter checks before it talks to MongoDB.
// ---------------------------------------------------------------------------------------------

describe('databaseNameFromUrl', () => {
  it.each([
    ['mongodb://localhost:27017/reads', 'reads'],
    ['mongodb://localhost/reads?retryWrites=true', 'reads'],
    ['mongodb://user:p%40ss@a:1,b:2,c:3/reads?replicaSet=rs0', 'reads'],
    ['mongodb+srv://user:pass@cluster0.example.net/reads?w=majority', 'reads'],
    ['mongodb://localhost/my%20db', 'my db'],
    ['mongodb://localhost:27017', undefined],
    ['mongodb://localhost:27017/', undefined],
    ['mongodb://localhost:27017/?directConnection=true', undefined],
    ['mongodb://a:1,b:2/?replicaSet=rs0', undefined],
  ])('%s → %p', (url, expected) => {
    expect(databaseNameFromUrl(url)).toBe(expected);
  });
});

describe('MongoReadStore (no server needed)', () => {
  // Never connected: the driver connects on first use, and these tests must not get that far.
  const client = new MongoClient('mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100');
  const store = MongoReadStore.fromClient(client);

  afterAll(async () => {
    await store.close();
    await client.close();
  });

  it('uses campaign_ops unless told otherwise', () => {
    expect(store.databaseName).toBe('campaign_ops');
    expect(MongoReadStore.fromClient(client, { database: 'elsewhere' }).databaseName).toBe('elsewhere');
  });

  it('rejects collection names that are not plain, or that the adapter uses itself', () => {
    for (const name of ['Items', '1items', 'items-x', 'items.x', 'items; x', '', 'checkpoints', 'items__rebuild_1']) {
      expect(() => store.collection(name)).toThrow(/invalid collection name/);
    }
  });

  it('rejects index fields that are not plain or are reserved', () => {
    expect(() => store.collection('items', { indexes: ['a.b'] })).toThrow(/invalid field name/);
    expect(() => store.collection('items', { indexes: ['$x'] })).toThrow(/invalid field name/);
    expect(() => store.collection('items', { indexes: ['_rev'] })).toThrow(/reserved field name/);
    expect(() => store.collection('items', { indexes: ['_id'] })).toThrow(/reserved field name/);
  });

  it('rejects invalid filters, orders and limits before any query', async () => {
    const items = store.collection('items');
    await expect(items.find({ "status' OR 1 --": 'x' })).rejects.toThrow(/invalid field name/);
    await expect(items.find({ _rev: 1 })).rejects.toThrow(/reserved field name/);
    await expect(items.count({ 'a.b': 1 })).rejects.toThrow(/invalid field name/);
    await expect(items.find({ status: { $ne: 'x' } as never })).rejects.toThrow(/unsupported filter operator/);
    await expect(items.find({}, { order: 'ASC' as never })).rejects.toThrow(/order must be/);
    for (const limit of [0, 1001, 2.5, -1]) await expect(items.find({}, { limit })).rejects.toThrow(RangeError);
    await expect(items.find({}, { startingAfter: 5 as never })).rejects.toThrow(/startingAfter/);
    await expect(items.claim({}, { status: 'x' }, 'a.b')).rejects.toThrow(/invalid field name/);
    await expect(items.claim({}, { status: 'x' }, '_rev')).rejects.toThrow(/reserved field name/);
  });

  it('rejects patches that would change the id or touch reserved fields', async () => {
    const items = store.collection('items');
    await expect(items.update('doc_1', { id: 'doc_2' })).rejects.toThrow(/cannot change the id/);
    await expect(items.claim({}, { id: 'doc_2' })).rejects.toThrow(/cannot change the id/);
    await expect(items.update('doc_1', { _rev: 9 } as never)).rejects.toThrow(/reserved field name/);
    await expect(items.update('doc_1', { 'a.b': 1 } as never)).rejects.toThrow(/invalid field name/);
    await expect(items.update('doc_1', { $set: { a: 1 } } as never)).rejects.toThrow(/invalid field name/);
  });

  it('rejects documents it cannot store as they are', async () => {
    const items = store.collection('items');
    await expect(items.upsert({ id: 'doc_1', _rev: 3 }, 1)).rejects.toThrow(/cannot have a field named _rev/);
    await expect(items.insert({ id: 'doc_1', _id: 'other' })).rejects.toThrow(/cannot have a field named _id/);
    await expect(items.upsert({ id: '' }, 1)).rejects.toThrow(/non-empty string id/);
    await expect(items.insert({ id: 7 } as never)).rejects.toThrow(/non-empty string id/);
    await expect(items.upsert({ id: 'doc_1' }, 1.5)).rejects.toThrow(/revision must be an integer/);
  });

  it('refuses everything once closed', async () => {
    const closed = MongoReadStore.fromClient(client);
    const items = closed.collection('items');
    await closed.close();
    await closed.close();
    await expect(items.get('doc_1')).rejects.toThrow(/closed/);
    await expect(closed.checkpoints.get('x')).rejects.toThrow(/closed/);
    await expect(closed.ping()).rejects.toThrow(/closed/);
    await expect(closed.rebuildInto('items', async () => undefined)).rejects.toThrow(/closed/);
  });
});

// ---------------------------------------------------------------------------------------------
// Against MongoDB 7 in a container (skipped, with one line, where no container runtime answers).
// ---------------------------------------------------------------------------------------------

describeWithContainers('MongoDB adapter', () => {
  let container: StartedTestContainer;
  let server: string;
  let raw: MongoClient;
  // A fresh database per run, so the suite could as well share a server.
  const contractDatabase = unique('read_store_contract');
  const adapterDatabase = unique('read_store_adapter');
  const urlOf = (database = '') => `${server}/${database}?directConnection=true`;

  beforeAll(async () => {
    container = await new GenericContainer('mongo:7')
      .withExposedPorts(27017)
      .withWaitStrategy(Wait.forLogMessage('Waiting for connections'))
      .withStartupTimeout(120_000)
      .start();
    server = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}`;
    raw = await MongoClient.connect(urlOf());
  }, 180_000);

  afterAll(async () => {
    await raw?.close();
    await container?.stop();
  });

  readStoreContract(
    'MongoDB',
    async () => MongoReadStore.connect(urlOf(contractDatabase)),
    async () => {
      await raw.db(contractDatabase).dropDatabase();
    },
  );

  describe('MongoReadStore', () => {
    let store: MongoReadStore;
    let db: Db;

    beforeAll(async () => {
      store = await MongoReadStore.connect(urlOf(), { database: adapterDatabase });
      db = raw.db(adapterDatabase);
    });

    afterAll(async () => {
      await store?.close();
      await db?.dropDatabase();
    });

    it('takes the database from the options, else the URL, else campaign_ops', async () => {
      expect(store.databaseName).toBe(adapterDatabase);
      const fromUrl = await MongoReadStore.connect(urlOf('from_url'));
      const fallback = await MongoReadStore.connect(urlOf());
      try {
        expect(fromUrl.databaseName).toBe('from_url');
        expect(fallback.databaseName).toBe('campaign_ops');
        await expect(fallback.ping()).resolves.toBeUndefined();
      } finally {
        await fromUrl.close();
        await fallback.close();
      }
    });

    it('stores documents with _id, their fields at top level and the revision in _rev, and returns neither', async () => {
      const name = unique('layout');
      const items = store.collection(name);
      const doc = { id: 'doc_1', status: 'pending', amount: 12.5, when: new Date(0) };
      await items.upsert(doc, 4);
      await items.insert({ id: 'doc_2', status: 'inserted' });

      const rows = await db.collection(name).find().sort({ _id: 1 }).toArray();
      // Stored as JSON would store it: the Date is its ISO string, as in SQLite.
      expect(rows).toStrictEqual([
        { _id: 'doc_1', id: 'doc_1', status: 'pending', amount: 12.5, when: '1970-01-01T00:00:00.000Z', _rev: 4 },
        { _id: 'doc_2', id: 'doc_2', status: 'inserted' },
      ]);
      await expect(items.get('doc_1')).resolves.toStrictEqual({ id: 'doc_1', status: 'pending', amount: 12.5, when: '1970-01-01T00:00:00.000Z' });
      await expect(items.update('doc_1', { status: 'sent' })).resolves.toStrictEqual({
        id: 'doc_1',
        status: 'sent',
        amount: 12.5,
        when: '1970-01-01T00:00:00.000Z',
      });
      await expect(items.claim({ status: 'inserted' }, { status: 'claimed' })).resolves.toStrictEqual({ id: 'doc_2', status: 'claimed' });
      await expect(items.revisionOf('doc_2')).resolves.toBeNull();
    });

    it('lets an upsert replace an inserted document (it has no revision)', async () => {
      const items = store.collection(unique('inserted'));
      await items.insert({ id: 'doc_1', status: 'inserted', extra: true });
      await expect(items.upsert({ id: 'doc_1', status: 'projected' }, 0)).resolves.toBe(true);
      await expect(items.get('doc_1')).resolves.toStrictEqual({ id: 'doc_1', status: 'projected' });
      await expect(items.revisionOf('doc_1')).resolves.toBe(0);
    });

    it('keeps the highest of many concurrent upserts of a new document', async () => {
      const items = store.collection(unique('race'));
      for (let round = 0; round < 5; round++) {
        const id = `doc_${round}`;
        const revisions = Array.from({ length: 20 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
        const results = await Promise.all(revisions.map((revision) => items.upsert({ id, revision }, revision)));
        expect(results[revisions.indexOf(20)]).toBe(true);
        await expect(items.revisionOf(id)).resolves.toBe(20);
        await expect(items.get(id)).resolves.toStrictEqual({ id, revision: 20 });
      }
    });

    it('does not match arrays with scalar filters, as SQLite does not', async () => {
      const items = store.collection(unique('arrays'), { indexes: ['tag'] });
      await items.insert({ id: 'doc_1', tag: 'x' });
      await items.insert({ id: 'doc_2', tag: ['x', 'y'] });
      await items.insert({ id: 'doc_3', tag: [null] });
      await items.insert({ id: 'doc_4', tag: [1, 5] });
      await items.insert({ id: 'doc_5' });
      const ids = async (where: Parameters<typeof items.find>[0]) => (await items.find(where, { order: 'asc' })).items.map((doc) => doc.id);
      await expect(ids({ tag: 'x' })).resolves.toEqual(['doc_1']);
      await expect(ids({ tag: { $in: ['y', 'x'] } })).resolves.toEqual(['doc_1']);
      await expect(ids({ tag: null })).resolves.toEqual(['doc_5']);
      await expect(ids({ tag: { $gte: 2 } })).resolves.toEqual([]);
      await expect(items.count({ tag: { $lte: 'z' } })).resolves.toBe(1);
    });

    it('creates a { field: 1, _id: 1 } index per declared field, which serves filtered lists and claims', async () => {
      const name = unique('indexed');
      const items = store.collection(name, { indexes: ['status', 'dueAt', 'id'] });
      await items.insert({ id: 'doc_1', status: 'pending', dueAt: 5 });
      const keys = await eventually(async () => {
        const indexes = await db.collection(name).listIndexes().toArray();
        const found = indexes.map((index) => index.key as Record<string, number>);
        if (found.length < 3) throw new Error(`indexes so far: ${JSON.stringify(found)}`);
        return found;
      });
      expect(keys).toEqual(expect.arrayContaining([{ _id: 1 }, { status: 1, _id: 1 }, { dueAt: 1, _id: 1 }]));
      expect(keys).toHaveLength(3);

      // The shape `find` sends, array guard included, gets tight bounds on the status index and its
      // order from that index; a claim ordered by dueAt gets its order from the dueAt index. (Hinted:
      // with a handful of documents the planner's choice between candidate plans proves nothing.)
      const listing = await db
        .collection<{ _id: string }>(name)
        .find({ status: { $eq: 'pending', $not: { $type: 'array' } }, _id: { $lt: 'doc_9' } })
        .sort({ _id: -1 })
        .limit(21)
        .hint('status_1__id_1')
        .explain('queryPlanner');
      const listingStages = stagesOf(listing.queryPlanner.winningPlan);
      expect(listingStages.map((stage) => stage.stage)).not.toContain('SORT');
      expect(listingStages.find((stage) => stage.stage === 'IXSCAN')?.indexBounds).toMatchObject({ status: ['["pending", "pending"]'] });
      const claiming = await db
        .collection(name)
        .find({ status: { $eq: 'pending', $not: { $type: 'array' } } })
        .sort({ dueAt: 1, _id: 1 })
        .limit(1)
        .hint('dueAt_1__id_1')
        .explain('queryPlanner');
      expect(stagesOf(claiming.queryPlanner.winningPlan).map((stage) => stage.stage)).not.toContain('SORT');
    });

    it('reports a failed index build once on the collection and on every ping until it is declared again successfully', async () => {
      const name = unique('badindex');
      // Same key, another name: createIndex with the default name fails (IndexOptionsConflict).
      await db.collection(name).createIndex({ status: 1, _id: 1 }, { name: 'taken' });
      const items = store.collection(name, { indexes: ['status'] });
      await eventually(() => expect(store.ping()).rejects.toThrow(/creating read store indexes failed: .*status/));
      await expect(items.count({})).rejects.toThrow(/creating read store indexes failed/);
      await expect(items.count({})).resolves.toBe(0);
      await expect(store.ping()).rejects.toThrow(/creating read store indexes failed/);

      await db.collection(name).dropIndex('taken');
      store.collection(name, { indexes: ['status'] });
      await eventually(() => expect(store.ping()).resolves.toBeUndefined());
    });

    it('keeps checkpoints in a checkpoints collection', async () => {
      const name = unique('projection');
      await store.checkpoints.set(name, '17');
      await store.checkpoints.set(name, '18');
      await expect(db.collection<{ _id: string }>('checkpoints').findOne({ _id: name })).resolves.toStrictEqual({ _id: name, position: '18' });
    });

    describe('rebuildInto', () => {
      const leftovers = async (name: string) =>
        (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).filter((n) => n.startsWith(`${name}__rebuild_`));

      it('fills a fresh collection through the Collection API and swaps it in with its indexes', async () => {
        const name = unique('rebuilt');
        const live = store.collection(name, { indexes: ['status'] });
        await live.upsert({ id: 'doc_1', status: 'old' }, 3);
        await live.upsert({ id: 'doc_2', status: 'gone' }, 1);
        // An index the live collection has but this store did not declare survives too.
        await db.collection(name).createIndex({ tag: 1, _id: 1 });
        await eventually(async () => expect((await db.collection(name).listIndexes().toArray()).length).toBe(3));

        let seenDuringFill: unknown;
        await store.rebuildInto(name, async (target) => {
          await target.upsert({ id: 'doc_1', status: 'rebuilt' }, 7);
          await target.upsert({ id: 'doc_3', status: 'new' }, 2);
          await target.insert({ id: 'doc_4', status: 'inserted' });
          await expect(target.upsert({ id: 'doc_1', status: 'stale' }, 6)).resolves.toBe(false);
          // Readers still see the old contents while the rebuild runs.
          seenDuringFill = await live.get('doc_1');
        });

        expect(seenDuringFill).toStrictEqual({ id: 'doc_1', status: 'old' });
        // The handle taken before the rebuild reads the swapped-in contents.
        await expect(live.find({}, { order: 'asc' })).resolves.toStrictEqual({
          items: [
            { id: 'doc_1', status: 'rebuilt' },
            { id: 'doc_3', status: 'new' },
            { id: 'doc_4', status: 'inserted' },
          ],
          hasMore: false,
        });
        await expect(live.revisionOf('doc_1')).resolves.toBe(7);
        await expect(live.revisionOf('doc_4')).resolves.toBeNull();
        await expect(live.get('doc_2')).resolves.toBeNull();
        const keys = (await db.collection(name).listIndexes().toArray()).map((index) => index.key);
        expect(keys).toEqual(expect.arrayContaining([{ _id: 1 }, { status: 1, _id: 1 }, { tag: 1, _id: 1 }]));
        await expect(leftovers(name)).resolves.toEqual([]);
        // Projection goes on as usual on the swapped-in collection.
        await expect(live.upsert({ id: 'doc_1', status: 'replayed' }, 7)).resolves.toBe(false);
        await expect(live.upsert({ id: 'doc_1', status: 'next' }, 8)).resolves.toBe(true);
      });

      it('leaves the live collection as it was and drops the fresh one when the fill fails', async () => {
        const name = unique('failed');
        const live = store.collection(name);
        await live.upsert({ id: 'doc_1', status: 'live' }, 1);
        await expect(
          store.rebuildInto(name, async (target) => {
            await target.upsert({ id: 'doc_1', status: 'half done' }, 2);
            throw new Error('projection failed');
          }),
        ).rejects.toThrow('projection failed');
        await expect(live.find({})).resolves.toStrictEqual({ items: [{ id: 'doc_1', status: 'live' }], hasMore: false });
        await expect(live.revisionOf('doc_1')).resolves.toBe(1);
        await expect(leftovers(name)).resolves.toEqual([]);
      });

      it('swaps in an empty collection when the fill writes nothing, and creates a missing one', async () => {
        const emptied = unique('emptied');
        await store.collection(emptied).insert({ id: 'doc_1' });
        await store.rebuildInto(emptied, async () => undefined);
        await expect(store.collection(emptied).count({})).resolves.toBe(0);

        const created = unique('created');
        await store.rebuildInto<Doc & { n: number }>(created, async (target) => {
          await target.upsert({ id: 'doc_1', n: 1 }, 0);
        });
        await expect(store.collection(created).get('doc_1')).resolves.toStrictEqual({ id: 'doc_1', n: 1 });
      });

      it('refuses names the port would refuse', async () => {
        await expect(store.rebuildInto('Bad-Name', async () => undefined)).rejects.toThrow(/invalid collection name/);
        await expect(store.rebuildInto('checkpoints', async () => undefined)).rejects.toThrow(/invalid collection name/);
      });
    });
  });
});

type PlanStage = { stage?: string; indexBounds?: Record<string, string[]>; [key: string]: unknown };

/** Every stage of an explained plan (classic or SBE: the tree may sit under `queryPlan`). */
function stagesOf(plan: PlanStage | undefined): PlanStage[] {
  if (!plan || typeof plan !== 'object') return [];
  const children = [plan.queryPlan, plan.inputStage, ...((plan.inputStages as PlanStage[] | undefined) ?? [])] as (PlanStage | undefined)[];
  return [...(plan.stage ? [plan] : []), ...children.flatMap(stagesOf)];
}

/** Retries `check` until it passes (background index builds take a moment), at most ~10 s. */
async function eventually<T>(check: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
