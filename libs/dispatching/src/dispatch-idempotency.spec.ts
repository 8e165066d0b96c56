import { Collection, FindOptions, Filter, ReadStore } from '@campaign-ops/read-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { indexedOnly } from '@campaign-ops/testing/read-store';
import { DispatchIdempotency, IDEMPOTENCY_WINDOW_MS } from './dispatch-idempotency';

/** Idempotency-Keys as dispatch-service holds them: one dispatch per account, mode and key for 24 h. */
describe('dispatch idempotency', () => {
  const T0 = Date.parse('2026-11-24T10:00:00.000Z');
  let reads: SqliteReadStore;
  let keys: DispatchIdempotency;
  const spring = { channel: 'meta_ads', campaign: { name: 'Spring' } };
  const autumn = { channel: 'meta_ads', campaign: { name: 'Autumn' } };

  beforeEach(() => {
    jest.useFakeTimers({ now: T0, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    reads = SqliteReadStore.open(':memory:');
    keys = new DispatchIdempotency(reads);
  });
  afterEach(async () => {
    jest.useRealTimers();
    await reads.close();
  });
  const at = (ms: number) => jest.setSystemTime(T0 + ms);

  it('gives a key to the first dispatch and tells later requests which dispatch holds it, and whether they asked the same', async () => {
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_1', spring)).toEqual({ kind: 'claimed' });
    at(1000);
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_2', spring)).toEqual({ kind: 'taken', dispatchId: 'dsp_1', claimedAt: T0, sameRequest: true });
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_3', autumn)).toEqual({ kind: 'taken', dispatchId: 'dsp_1', claimedAt: T0, sameRequest: false });
  });

  it('keeps keys apart by account and mode', async () => {
    await keys.claim('acct_1', 'test', 'k', 'dsp_1', spring);
    expect(await keys.claim('acct_1', 'live', 'k', 'dsp_2', spring)).toEqual({ kind: 'claimed' });
    expect(await keys.claim('acct_2', 'test', 'k', 'dsp_3', spring)).toEqual({ kind: 'claimed' });
    expect(await keys.claim('acct_1', 'test', 'k2', 'dsp_4', spring)).toEqual({ kind: 'claimed' });
  });

  it('holds a key for 24 hours, then gives it to whoever asks next', async () => {
    await keys.claim('acct_1', 'test', 'k', 'dsp_1', spring);
    at(IDEMPOTENCY_WINDOW_MS - 1);
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_2', autumn)).toMatchObject({ kind: 'taken', dispatchId: 'dsp_1' });
    at(IDEMPOTENCY_WINDOW_MS);
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_2', autumn)).toEqual({ kind: 'claimed' });
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_3', autumn)).toEqual({
      kind: 'taken',
      dispatchId: 'dsp_2',
      claimedAt: T0 + IDEMPOTENCY_WINDOW_MS,
      sameRequest: true,
    });
  });

  describe('a reservation whose dispatch never appeared', () => {
    const claimOf = async () => {
      const claim = await keys.claim('acct_1', 'test', 'k', 'dsp_2', spring);
      if (claim.kind !== 'taken') throw new Error('expected the key to be taken');
      return claim;
    };
    beforeEach(() => keys.claim('acct_1', 'test', 'k', 'dsp_1', spring));

    it('is taken over by the same request a minute later, and then held by the new dispatch', async () => {
      at(60_000);
      expect(await keys.takeOverAbandoned('acct_1', 'test', 'k', await claimOf(), 'dsp_2')).toBe(true);
      at(61_000);
      expect(await keys.claim('acct_1', 'test', 'k', 'dsp_3', spring)).toEqual({
        kind: 'taken',
        dispatchId: 'dsp_2',
        claimedAt: T0 + 60_000,
        sameRequest: true,
      });
    });
    it('is not taken over before a minute', async () => {
      at(59_999);
      expect(await keys.takeOverAbandoned('acct_1', 'test', 'k', await claimOf(), 'dsp_2')).toBe(false);
      expect(await keys.claim('acct_1', 'test', 'k', 'dsp_3', spring)).toMatchObject({ dispatchId: 'dsp_1' });
    });
    it('is not taken over by another request', async () => {
      at(120_000);
      expect(await keys.takeOverAbandoned('acct_1', 'test', 'k', { ...(await claimOf()), sameRequest: false }, 'dsp_2')).toBe(false);
      expect(await keys.claim('acct_1', 'test', 'k', 'dsp_3', spring)).toMatchObject({ dispatchId: 'dsp_1' });
    });
    it('is taken over once: a second taker that saw the old holder gets nothing', async () => {
      at(120_000);
      const seen = await claimOf();
      expect(await keys.takeOverAbandoned('acct_1', 'test', 'k', seen, 'dsp_2')).toBe(true);
      expect(await keys.takeOverAbandoned('acct_1', 'test', 'k', seen, 'dsp_3')).toBe(false);
      expect(await keys.claim('acct_1', 'test', 'k', 'dsp_4', spring)).toMatchObject({ dispatchId: 'dsp_2' });
    });
  });

  it('gives a key back when no dispatch was made, but never undoes a takeover', async () => {
    await keys.claim('acct_1', 'test', 'k', 'dsp_1', spring);
    await keys.release('acct_1', 'test', 'k', 'dsp_1');
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_2', autumn)).toEqual({ kind: 'claimed' });
    await keys.release('acct_1', 'test', 'k', 'dsp_1'); // dsp_1 no longer holds it
    expect(await keys.claim('acct_1', 'test', 'k', 'dsp_3', autumn)).toMatchObject({ kind: 'taken', dispatchId: 'dsp_2' });
  });

  it('sweeps the keys whose 24 hours are over, every page of them, and keeps the others', async () => {
    for (let n = 0; n < 501; n++) await keys.claim('acct_1', 'test', `old-${n}`, `dsp_${n}`, spring);
    at(IDEMPOTENCY_WINDOW_MS - 1000);
    await keys.claim('acct_1', 'test', 'young', 'dsp_young', spring);
    at(IDEMPOTENCY_WINDOW_MS + 1);
    expect(await keys.sweep()).toBe(501);
    expect(await keys.sweep()).toBe(0);
    expect(await keys.claim('acct_1', 'test', 'young', 'dsp_x', spring)).toMatchObject({ kind: 'taken', dispatchId: 'dsp_young' });
    const left = await reads.collection('dispatch_idempotency_keys').find({}, { limit: 10 });
    expect(left.items).toHaveLength(1);
  });

  it('finishes a sweep however many keys are still young, more than a page of them', async () => {
    await keys.claim('acct_1', 'test', 'old', 'dsp_old', spring);
    at(1000);
    for (let n = 0; n < 501; n++) await keys.claim('acct_1', 'test', `young-${n}`, `dsp_${n}`, spring);
    at(IDEMPOTENCY_WINDOW_MS + 500);
    // A sweep that paged through young keys would read the same full page of them for ever.
    let finds = 0;
    const bounded: ReadStore = Object.assign(Object.create(reads) as ReadStore, {
      collection: <T extends { id: string }>(name: string, options?: object) => {
        const inner = reads.collection<T>(name, options);
        return Object.assign(Object.create(inner) as Collection<T>, {
          find: async (where: Filter, findOptions?: FindOptions) => {
            if (++finds > 10) throw new Error('the sweep is still reading after 10 pages');
            return inner.find(where, findOptions);
          },
        });
      },
    });
    const sweeping = new DispatchIdempotency(bounded);
    expect(await sweeping.sweep()).toBe(1);
    expect(await sweeping.sweep()).toBe(0);
    expect(await keys.claim('acct_1', 'test', 'young-500', 'dsp_x', spring)).toMatchObject({ kind: 'taken', dispatchId: 'dsp_500' });
  });

  it('finds the expired keys through an index the read store was told to build (no collection scan per sweep)', async () => {
    const indexed = new DispatchIdempotency(indexedOnly(reads));
    await indexed.claim('acct_1', 'test', 'k', 'dsp_1', spring);
    at(IDEMPOTENCY_WINDOW_MS + 1);
    expect(await indexed.sweep()).toBe(1);
  });

  it('gives an expired key to exactly one of many simultaneous requests', async () => {
    await keys.claim('acct_1', 'test', 'k', 'dsp_0', spring);
    at(IDEMPOTENCY_WINDOW_MS);
    const claims = await Promise.all(Array.from({ length: 10 }, (_, n) => keys.claim('acct_1', 'test', 'k', `dsp_${n + 1}`, spring)));
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
  });

  it('leaves a key renewed between the sweep finding it and deleting it', async () => {
    let renewed = false;
    const racing: ReadStore = Object.assign(Object.create(reads) as ReadStore, {
      collection: <T extends { id: string }>(name: string, options?: object) => {
        const inner = reads.collection<T>(name, options);
        return Object.assign(Object.create(inner) as Collection<T>, {
          get: async (id: string) => {
            const record = await inner.get(id);
            return record && renewed ? { ...record, created_at: new Date().toISOString() } : record;
          },
        });
      },
    });
    const sweeping = new DispatchIdempotency(racing);
    await sweeping.claim('acct_1', 'test', 'k', 'dsp_1', spring);
    at(IDEMPOTENCY_WINDOW_MS + 1);
    renewed = true;
    expect(await sweeping.sweep()).toBe(0);
    renewed = false;
    expect(await sweeping.sweep()).toBe(1);
  });
});
