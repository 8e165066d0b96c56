import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { indexedOnly } from '@campaign-ops/testing/read-store';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import {
  answerSealingKey,
  IDEMPOTENCY_COLLECTION,
  IDEMPOTENCY_TTL_MS,
  IdempotencyRecord,
  idempotencyRecordId,
  IdempotencyStore,
  idempotencyOptionsProvider,
  isReplayableStatus,
  requestFingerprint,
  keyedFingerprint,
  Reservation,
  StoredAnswer,
} from './idempotency';

const body = (text: string) => Buffer.from(text, 'utf8');

describe('requestFingerprint', () => {
  it('is the same for the same method, path and body bytes', () => {
    expect(requestFingerprint('POST', '/v1/campaigns', body('{"a":1}'))).toBe(requestFingerprint('post', '/v1/campaigns', body('{"a":1}')));
    expect(requestFingerprint('POST', '/v1/campaigns', undefined)).toBe(requestFingerprint('POST', '/v1/campaigns', Buffer.alloc(0)));
  });

  it('differs when any of them differs, down to a byte of the body', () => {
    const base = requestFingerprint('POST', '/v1/campaigns', body('{"a":1}'));
    expect(requestFingerprint('POST', '/v1/campaigns', body('{"a": 1}'))).not.toBe(base);
    expect(requestFingerprint('POST', '/v1/webhooks', body('{"a":1}'))).not.toBe(base);
    expect(requestFingerprint('PATCH', '/v1/campaigns', body('{"a":1}'))).not.toBe(base);
    // the path and the body cannot be traded for one another
    expect(requestFingerprint('POST', '/a', body('\nb'))).not.toBe(requestFingerprint('POST', '/a\n', body('b')));
  });

  it('is sha256 of the upper-case method, the length-prefixed path and the body: records outlive a deploy, so the format must not drift', () => {
    // sha256('POST\n13:/v1/campaigns\n{"a":1}')
    const vector = 'e05246ee32674ae31e7b9cc899a6a44c4c2f96f8db4bb617ac28f30b54044fb1';
    expect(requestFingerprint('post', '/v1/campaigns', body('{"a":1}'))).toBe(vector);
    expect(requestFingerprint('POST', '/v1/campaigns', body('{"a":1}'))).toBe(vector);
  });
});

describe('idempotencyRecordId', () => {
  it('scopes a key: the same key in another account or mode is another record', () => {
    const id = idempotencyRecordId('acct_1:test', 'key-1', '');
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(idempotencyRecordId('acct_1:test', 'key-1', '')).toBe(id);
    expect(idempotencyRecordId('acct_1:live', 'key-1', '')).not.toBe(id);
    expect(idempotencyRecordId('acct_2:test', 'key-1', '')).not.toBe(id);
    expect(idempotencyRecordId('admin', 'key-1', '')).not.toBe(id);
    expect(idempotencyRecordId('a', 'b\nc', '')).not.toBe(idempotencyRecordId('a\nb', 'c', ''));
    // Keyed: without the deployment's secret, a guessed key cannot be checked against the store.
    expect(idempotencyRecordId('acct_1:test', 'key-1', 'a'.repeat(64))).not.toBe(id);
    expect(idempotencyRecordId('acct_1:test', 'key-1', 'a'.repeat(64))).toBe(idempotencyRecordId('acct_1:test', 'key-1', 'a'.repeat(64)));
  });
});

describe('answerSealingKey', () => {
  it('differs per scope and key, and is not the record id (which the store shows)', () => {
    const secret = 'a'.repeat(64);
    const key = answerSealingKey('acct_1:test', 'key-1', secret);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(answerSealingKey('acct_1:test', 'key-2', secret)).not.toBe(key);
    expect(answerSealingKey('acct_1:live', 'key-1', secret)).not.toBe(key);
    expect(answerSealingKey('acct_1:test', 'key-1', 'b'.repeat(64))).not.toBe(key);
    expect(idempotencyRecordId('acct_1:test', 'key-1', secret)).not.toBe(key);
  });
});

describe('isReplayableStatus', () => {
  it('keeps successes and business outcomes, releases validation errors and outages', () => {
    expect([200, 201, 402, 409, 422].every(isReplayableStatus)).toBe(true);
    expect([199, 300, 301, 304, 400, 401, 404, 405, 413, 415, 429, 500, 503].some(isReplayableStatus)).toBe(false);
  });
});

describe('IdempotencyStore', () => {
  let reads: SqliteReadStore;
  let now: number;
  let store: IdempotencyStore;
  const LEASE = 60_000;
  const answer = (requestId = 'req_1'): StoredAnswer => ({
    status: 200,
    contentType: 'application/json; charset=utf-8',
    body: `{"success":true,"request_id":"${requestId}"}`,
    requestId,
  });
  const run = async (fingerprint = 'fp-1', key = 'key-1', scope = 'acct_1:test'): Promise<Reservation> => {
    const begun = await store.begin(scope, key, fingerprint);
    if (begun.kind !== 'run') throw new Error(`expected to run, got ${begun.kind}`);
    return begun.reservation;
  };

  beforeEach(() => {
    reads = SqliteReadStore.open(':memory:');
    now = 1_700_000_000_000;
    store = new IdempotencyStore(reads, { leaseMs: LEASE, now: () => now, sweepIntervalMs: 0 });
  });
  afterEach(() => reads.close());

  it('runs the first request, answers in_use while it runs, and replays its answer afterwards', async () => {
    const reservation = await run();
    expect(await store.begin('acct_1:test', 'key-1', 'fp-1')).toEqual({ kind: 'in_use' });
    expect(await store.complete(reservation, answer())).toBe(true);
    expect(await store.begin('acct_1:test', 'key-1', 'fp-1')).toEqual({ kind: 'replay', answer: answer() });
  });

  it('answers reused to another request with the key, in flight or done', async () => {
    const reservation = await run('fp-1');
    expect(await store.begin('acct_1:test', 'key-1', 'fp-2')).toEqual({ kind: 'reused' });
    await store.complete(reservation, answer());
    expect(await store.begin('acct_1:test', 'key-1', 'fp-2')).toEqual({ kind: 'reused' });
  });

  it("keeps the request's fingerprint keyed with the secret, never the bare digest of a body that may hold a token", async () => {
    const keyedStore = new IdempotencyStore(reads, { leaseMs: LEASE, now: () => now, sweepIntervalMs: 0, secret: 'deployment-secret' });
    const digest = requestFingerprint('POST', '/v1/connections', body('{"credentials":{"access_token":"EAAB-secret"}}'));
    const begun = await keyedStore.begin('acct_1:live', 'key-k', digest);
    if (begun.kind !== 'run') throw new Error(begun.kind);
    const [record] = (await reads.collection<{ id: string; fingerprint: string }>('idempotency_keys').find({}, { limit: 10 })).items;
    expect(record.fingerprint).toBe(keyedFingerprint(digest, 'deployment-secret'));
    expect(record.fingerprint).not.toContain(digest);
    expect(keyedFingerprint(digest, 'another-secret')).not.toBe(record.fingerprint);
    expect(await keyedStore.begin('acct_1:live', 'key-k', digest)).toEqual({ kind: 'in_use' });
    expect(await keyedStore.begin('acct_1:live', 'key-k', requestFingerprint('POST', '/v1/connections', body('{}')))).toEqual({ kind: 'reused' });
  });

  it('still matches a record kept with the bare digest before fingerprints were keyed', async () => {
    const reservation = await run('fp-old');
    await reads.collection<{ id: string; fingerprint: string }>('idempotency_keys').update(reservation.id, { fingerprint: 'fp-old' });
    await store.complete(reservation, answer());
    expect(await store.begin('acct_1:test', 'key-1', 'fp-old')).toEqual({ kind: 'replay', answer: answer() });
    expect(await store.begin('acct_1:test', 'key-1', 'fp-new')).toEqual({ kind: 'reused' });
  });

  it('keeps keys apart by scope', async () => {
    await run('fp-1', 'key-1', 'acct_1:test');
    expect((await store.begin('acct_1:live', 'key-1', 'fp-1')).kind).toBe('run');
    expect((await store.begin('acct_2:test', 'key-1', 'fp-2')).kind).toBe('run');
  });

  it('frees a released key for the next request, with any body', async () => {
    const reservation = await run('fp-invalid');
    await store.release(reservation);
    const again = await run('fp-fixed');
    await store.complete(again, answer('req_2'));
    expect(await store.begin('acct_1:test', 'key-1', 'fp-fixed')).toEqual({ kind: 'replay', answer: answer('req_2') });
  });

  it('lets another request take over a reservation whose lease ran out; the first one can no longer complete', async () => {
    const crashed = await run();
    now += LEASE - 1;
    expect(await store.begin('acct_1:test', 'key-1', 'fp-1')).toEqual({ kind: 'in_use' });
    now += 1;
    const takeover = await run();
    expect(takeover.token).not.toBe(crashed.token);
    expect(await store.complete(crashed, answer('req_late'))).toBe(false);
    await store.release(crashed); // a release of a lost reservation changes nothing
    expect(await store.begin('acct_1:test', 'key-1', 'fp-1')).toEqual({ kind: 'in_use' });
    expect(await store.complete(takeover, answer('req_2'))).toBe(true);
    expect(await store.begin('acct_1:test', 'key-1', 'fp-1')).toEqual({ kind: 'replay', answer: answer('req_2') });
  });

  it('replays for 24 hours, then the key is new again', async () => {
    await store.complete(await run('fp-1'), answer());
    now += IDEMPOTENCY_TTL_MS - 1;
    expect((await store.begin('acct_1:test', 'key-1', 'fp-1')).kind).toBe('replay');
    expect((await store.begin('acct_1:test', 'key-1', 'fp-2')).kind).toBe('reused');
    now += 1;
    expect((await store.begin('acct_1:test', 'key-1', 'fp-2')).kind).toBe('run');
  });

  it('lets exactly one of many simultaneous requests run', async () => {
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => store.begin('acct_1:test', 'key-race', 'fp-1')));
    expect(outcomes.filter((o) => o.kind === 'run')).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'in_use')).toHaveLength(49);
  });

  it('lets exactly one of many simultaneous takeovers of an expired record run', async () => {
    await store.complete(await run('fp-1', 'key-old'), answer());
    now += IDEMPOTENCY_TTL_MS;
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.begin('acct_1:test', 'key-old', 'fp-1')));
    expect(outcomes.filter((o) => o.kind === 'run')).toHaveLength(1);
  });

  it('stores neither the key nor the scope in clear', async () => {
    await store.complete(await run('fp-1', 'secret-key', 'acct_secret:test'), answer());
    const records = await reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION).find({}, { limit: 10 });
    expect(records.items).toHaveLength(1);
    expect(JSON.stringify(records.items[0])).not.toMatch(/secret/);
  });

  it('keeps the answer sealed: a new API key or signing secret in it is not readable from the store', async () => {
    const secretAnswer: StoredAnswer = { ...answer(), body: '{"success":true,"data":{"key":"mk_live_SECRETSECRETSECRETSECRETSECRET"}}' };
    await store.complete(await run('fp-1', 'key-9'), secretAnswer);
    const records = await reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION).find({}, { limit: 10 });
    expect(JSON.stringify(records.items)).not.toMatch(/SECRET|mk_live/);
    expect(await store.begin('acct_1:test', 'key-9', 'fp-1')).toEqual({ kind: 'replay', answer: secretAnswer });
  });

  it('sweeps a record only once it expired a whole lease ago', async () => {
    await store.release(await run('fp', 'released')); // expires_at 0: long expired
    await store.complete(await run('fp', 'kept'), answer());
    now += IDEMPOTENCY_TTL_MS + LEASE; // 'kept' expired exactly a lease ago: not yet
    expect(await store.sweep()).toBe(1);
    now += 1;
    expect(await store.sweep()).toBe(1);
  });

  it.each([
    ['taken over', () => ({ token: 'someone-else', expires_at: now + IDEMPOTENCY_TTL_MS })],
    ['taken over and released again', () => ({ token: 'someone-else', expires_at: 0, locked_until: 0 })],
  ])('leaves alone a record %s between the sweep finding it and deleting it', async (_, since: () => Partial<IdempotencyRecord>) => {
    const taken = new Set<string>();
    // The store as another replica changes it: what the sweep reads again is a taken-over record.
    const racing: ReadStore = Object.assign(Object.create(reads) as ReadStore, {
      collection: <T extends { id: string }>(name: string, options?: object) => {
        const inner = reads.collection<T>(name, options);
        return Object.assign(Object.create(inner) as Collection<T>, {
          get: async (id: string) => {
            const record = await inner.get(id);
            return record && taken.has(id) ? { ...record, ...since() } : record;
          },
        });
      },
    });
    const swept = new IdempotencyStore(racing, { leaseMs: LEASE, now: () => now, sweepIntervalMs: 0 });
    await swept.release(
      await (async () => {
        const begun = await swept.begin('acct_1:test', 'k', 'fp');
        if (begun.kind !== 'run') throw new Error(begun.kind);
        return begun.reservation;
      })(),
    );
    now += LEASE * 2;
    taken.add(idempotencyRecordId('acct_1:test', 'k', ''));
    expect(await swept.sweep()).toBe(0);
    taken.clear();
    expect(await swept.sweep()).toBe(1);
  });

  it('gives up with in_use after five rounds when the record keeps vanishing between its insert and its read', async () => {
    let inserts = 0;
    const vanishing: ReadStore = Object.assign(Object.create(reads) as ReadStore, {
      collection: <T extends { id: string }>(name: string, options?: object) =>
        Object.assign(Object.create(reads.collection<T>(name, options)) as Collection<T>, { insert: async () => (inserts++, false), get: async () => null }),
    });
    const store2 = new IdempotencyStore(vanishing, { leaseMs: LEASE, now: () => now, sweepIntervalMs: 0 });
    expect(await store2.begin('acct_1:test', 'k', 'fp')).toEqual({ kind: 'in_use' });
    expect(inserts).toBe(5);
  });

  it('warns when an answer comes after its reservation was taken over', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const crashed = await run();
      now += LEASE;
      await run();
      await store.complete(crashed, answer('req_late'));
      expect(warn).toHaveBeenCalledTimes(1);
      expect(JSON.parse(warn.mock.calls[0][0] as string)).toEqual({ msg: 'idempotency reservation lost before its answer was kept', request_id: 'req_late' });
      expect((warn.mock.contexts[0] as { context?: string }).context).toBe('idempotency');
      await store.complete(await run('fp-1', 'key-2'), answer());
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });

  it('sweeps every 10 minutes by default once the app has started, and stops with it', async () => {
    jest.useFakeTimers();
    try {
      const swept = new IdempotencyStore(reads, { now: () => now });
      const sweep = jest.spyOn(swept, 'sweep').mockResolvedValue(0);
      swept.onApplicationBootstrap();
      jest.advanceTimersByTime(10 * 60_000 - 1);
      expect(sweep).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(sweep).toHaveBeenCalledTimes(1);
      swept.onModuleDestroy();
      jest.advanceTimersByTime(60 * 60_000);
      expect(sweep).toHaveBeenCalledTimes(1);
      const never = new IdempotencyStore(reads, { now: () => now, sweepIntervalMs: 0 });
      const neverSweep = jest.spyOn(never, 'sweep').mockResolvedValue(0);
      never.onApplicationBootstrap();
      jest.advanceTimersByTime(60 * 60_000);
      expect(neverSweep).not.toHaveBeenCalled();
    } finally {
      jest.useRealTimers();
    }
  });

  it('logs a failed sweep and keeps sweeping', async () => {
    jest.useFakeTimers();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const swept = new IdempotencyStore(reads, { now: () => now, sweepIntervalMs: 1000 });
      const sweep = jest.spyOn(swept, 'sweep').mockRejectedValue(new Error('store down'));
      swept.onApplicationBootstrap();
      await jest.advanceTimersByTimeAsync(2000);
      expect(sweep).toHaveBeenCalledTimes(2);
      expect(warn).toHaveBeenCalledWith('sweeping expired idempotency keys failed: store down');
      swept.onModuleDestroy();
    } finally {
      warn.mockRestore();
      jest.useRealTimers();
    }
  });

  it('sweeps at most `limit` records a call, expired ones only, however many live records come before them', async () => {
    // Record ids are HMACs: the three expired keys are those whose ids sort last, after every live one.
    const keys = Array.from({ length: 10 }, (_, n) => `key-${n}`).sort((a, b) =>
      idempotencyRecordId('acct_1:test', a, '') < idempotencyRecordId('acct_1:test', b, '') ? -1 : 1,
    );
    const [live, expired] = [keys.slice(0, 7), keys.slice(7)];
    for (const key of live) await store.complete(await run('fp', key), answer());
    for (const key of expired) await store.release(await run('fp', key));
    now += LEASE * 2;
    expect(await store.sweep(2)).toBe(2);
    expect(await store.sweep(2)).toBe(1);
    expect(await store.sweep(2)).toBe(0);
    const left = await reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION).find({}, { limit: 20, order: 'asc' });
    expect(left.items.map((r) => r.id)).toEqual(live.map((key) => idempotencyRecordId('acct_1:test', key, '')));
  });

  it('finds what to sweep through an index the read store was told to build (no collection scan per sweep)', async () => {
    const indexed = new IdempotencyStore(indexedOnly(reads), { leaseMs: LEASE, now: () => now, sweepIntervalMs: 0 });
    const begun = await indexed.begin('acct_1:test', 'key-1', 'fp');
    if (begun.kind !== 'run') throw new Error(begun.kind);
    await indexed.release(begun.reservation);
    now += LEASE * 2;
    expect(await indexed.sweep()).toBe(1);
  });

  it('sweeps records that expired or were released a lease ago, and only those', async () => {
    await store.complete(await run('fp', 'old'), answer());
    await store.release(await run('fp', 'released'));
    now += IDEMPOTENCY_TTL_MS - LEASE * 2;
    await store.complete(await run('fp', 'recent'), answer());
    now += LEASE * 4;
    expect(await store.sweep()).toBe(2);
    const left = await reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION).find({}, { limit: 10 });
    expect(left.items.map((r) => r.id)).toEqual([idempotencyRecordId('acct_1:test', 'recent', '')]);
    expect((await store.begin('acct_1:test', 'recent', 'fp')).kind).toBe('replay');
    expect((await store.begin('acct_1:test', 'old', 'other')).kind).toBe('run');
  });
});

describe("the gateway's store", () => {
  it('keys records with the deployment secret, and leases a reservation for twice the longest bus timeout (at least a minute)', async () => {
    const reads = SqliteReadStore.open(':memory:');
    try {
      const store = new IdempotencyStore(
        reads,
        idempotencyOptionsProvider.useFactory({
          idempotencySecretKey: 'c'.repeat(64),
          requestTimeoutMs: 5_000,
          connectionRequestTimeoutMs: 45_000,
        } as ServiceConfig),
      );
      const short = new IdempotencyStore(
        reads,
        idempotencyOptionsProvider.useFactory({
          idempotencySecretKey: 'c'.repeat(64),
          requestTimeoutMs: 5_000,
          connectionRequestTimeoutMs: 5_000,
        } as ServiceConfig),
      );
      await store.begin('acct_1:test', 'key-1', 'fp');
      await short.begin('acct_1:test', 'key-2', 'fp');
      const record = async (key: string) =>
        (await reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION).get(idempotencyRecordId('acct_1:test', key, 'c'.repeat(64))))!;
      expect((await record('key-1')).locked_until - (await record('key-1')).created_at).toBe(90_000);
      expect((await record('key-2')).locked_until - (await record('key-2')).created_at).toBe(60_000);
    } finally {
      await reads.close();
    }
  });
});

describe('the gateway module’s store, as Nest builds it', () => {
  it("takes its secret and lease from the configuration: twice the longest bus timeout (a connection call's)", async () => {
    const reads = SqliteReadStore.open(':memory:');
    try {
      const moduleRef = await Test.createTestingModule({
        providers: [
          { provide: CONFIG, useValue: { idempotencySecretKey: 'd'.repeat(64), requestTimeoutMs: 10_000, connectionRequestTimeoutMs: 40_000 } },
          { provide: READ_STORE, useValue: reads },
          idempotencyOptionsProvider,
          IdempotencyStore,
        ],
      }).compile();
      await moduleRef.get(IdempotencyStore).begin('admin', 'key-1', 'fp');
      const record = (await reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION).get(idempotencyRecordId('admin', 'key-1', 'd'.repeat(64))))!;
      expect(record.locked_until - record.created_at).toBe(80_000);
    } finally {
      await reads.close();
    }
  });
});

describe('which answers are kept for replay', () => {
  const { isReplayableAnswer } = jest.requireActual('./idempotency') as typeof import('./idempotency');
  const error = (code: string) => JSON.stringify({ success: false, error: { code } });
  it('keeps outcomes, not "try again"', () => {
    expect(isReplayableAnswer(200, '{}')).toBe(true);
    expect(isReplayableAnswer(402, error('insufficient_credits'))).toBe(true);
    expect(isReplayableAnswer(409, error('dispatch_not_retryable'))).toBe(true);
    expect(isReplayableAnswer(409, error('idempotency_key_in_use'))).toBe(false);
    expect(isReplayableAnswer(409, error('idempotency_key_reused'))).toBe(false);
    expect(isReplayableAnswer(503, error('service_unavailable'))).toBe(false);
    expect(isReplayableAnswer(400, error('parameter_invalid'))).toBe(false);
  });
  it('keeps a success whatever its body, and no 409 it cannot read', () => {
    expect(isReplayableAnswer(200, 'plain text')).toBe(true);
    expect(isReplayableAnswer(409, 'not json')).toBe(false);
  });
});
