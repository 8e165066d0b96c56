import canonicalize from 'canonicalize';
import { Decider, DomainEvent, eventVersions } from '@campaign-ops/decider';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { AggregateRepository, toStoredEvent } from './aggregate-repository';
import { inCanonicalOrder, sortedKeys } from './canonical-order';
import { SeededRandom, seededRandom } from '@campaign-ops/testing/event-store';

const randomness = seededRandom;
type Random = SeededRandom;

// Not "__proto__": see the failing case below.
const KEYS = ['', 'a', 'b', 'B', '_', 'aa', 'ab', 'é', '😀', '\uff01', '"', '1', '2', '10', '01', '-1', 'constructor', 'toString', 'idempotencyKey', 'z'];
const isIntegerLike = (key: string) => /^(0|[1-9]\d*)$/.test(key) && Number(key) < 2 ** 32 - 1;

/** A JSON value whose objects list their keys in a random order. */
function json(random: Random, depth = 0): unknown {
  switch (random.int(depth >= 4 ? 4 : 7)) {
    case 0:
      return random.pick(['', 'x', 'é😀', '"quoted"', 'a\\b\n']);
    case 1:
      return random.pick([0, -0, 1, 1.5, 1e21, -7, 0.1]);
    case 2:
      return random.chance(0.5);
    case 3:
      return null;
    case 4:
      return Array.from({ length: random.int(4) }, () => json(random, depth + 1));
    default: {
      const keys = [...new Set(Array.from({ length: random.int(6) }, () => random.pick(KEYS)))];
      return Object.fromEntries(keys.map((key) => [key, json(random, depth + 1)]));
    }
  }
}

/** Whether every object lists its keys sorted, but for the integer-like ones JavaScript always lists first. */
function sortedThroughout(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(sortedThroughout);
  if (value === null || typeof value !== 'object') return true;
  const keys = Object.keys(value).filter((key) => !isIntegerLike(key));
  return keys.join('\u0001') === [...keys].sort().join('\u0001') && Object.values(value).every(sortedThroughout);
}

function hasIntegerLikeKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasIntegerLikeKey);
  if (value === null || typeof value !== 'object') return false;
  return Object.keys(value).some(isIntegerLike) || Object.values(value).some(hasIntegerLikeKey);
}

/** Every object and array of the value. */
function containers(value: unknown): object[] {
  if (value === null || typeof value !== 'object') return [];
  return [value, ...Object.values(value).flatMap(containers)];
}

class Money {
  constructor(
    readonly currency = 'EUR',
    readonly amount = 5,
  ) {}
}

describe('sortedKeys', () => {
  it('sorts the keys of every object, at every depth, by UTF-16 code units', () => {
    const sorted = sortedKeys({ z: 1, b: { d: [{ f: 1, e: { h: 1, g: 2 } }], c: null }, a: 'x', B: true, '😀': 1, '\uff01': 2, '': 0 });
    expect(JSON.stringify(sorted)).toBe('{"":0,"B":true,"a":"x","b":{"c":null,"d":[{"e":{"g":2,"h":1},"f":1}]},"z":1,"😀":1,"！":2}');
  });

  it('sorts keys that are out of order only at the end, and keeps those already in order', () => {
    expect(Object.keys(sortedKeys({ a: 1, b: 2, d: 3, c: 4 }))).toEqual(['a', 'b', 'c', 'd']);
    expect(Object.keys(sortedKeys({ a: 1, b: { x: 1, y: 2 }, c: 3 }))).toEqual(['a', 'b', 'c']);
  });

  it('keeps the order of arrays, sorting the objects in them', () => {
    expect(JSON.stringify(sortedKeys([3, 1, 2, [{ b: 1, a: 2 }, 'z', 'a']]))).toBe('[3,1,2,[{"a":2,"b":1},"z","a"]]');
  });

  it('answers primitives as they are', () => {
    for (const value of ['b', 0, -0, 1.5, true, null, undefined]) expect(sortedKeys(value)).toBe(value);
  });

  it('leaves objects that are not plain alone: the same instance, its keys in their order', () => {
    const at = new Date(0);
    const money = new Money();
    const map = new Map([
      ['b', 1],
      ['a', 2],
    ]);
    const sorted = sortedKeys({ map, money, at });
    expect(Object.keys(sorted)).toEqual(['at', 'map', 'money']);
    expect(sorted.at).toBe(at);
    expect(sorted.money).toBe(money);
    expect(Object.keys(sorted.money)).toEqual(['currency', 'amount']);
    expect(sorted.map).toBe(map);
    expect(sortedKeys(money)).toBe(money);
  });

  it('sorts an object without a prototype too, into a plain one', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { b: 1, a: 2 });
    const sorted = sortedKeys(bare);
    expect(JSON.stringify(sorted)).toBe('{"a":2,"b":1}');
    expect(Object.getPrototypeOf(sorted)).toBe(Object.prototype);
  });

  it('makes a copy and leaves its input alone, at every depth', () => {
    const random = randomness(0x0de7_0001);
    for (let i = 0; i < 2000; i++) {
      const input = json(random);
      const before = JSON.stringify(input);
      const sorted = sortedKeys(input);
      expect([i, JSON.stringify(input)]).toEqual([i, before]);
      // No object or array of the input is shared with the copy (changing the copy cannot change the event decided).
      const shared = containers(sorted).filter((container) => containers(input).includes(container));
      expect([i, shared]).toEqual([i, []]);
    }
  });

  it('keeps every member and item, and lists the keys sorted: the JCS text, when no key is integer-like', () => {
    const random = randomness(0x0de7_0002);
    let withoutIntegerLikeKeys = 0;
    for (let i = 0; i < 3000; i++) {
      const input = json(random);
      const sorted = sortedKeys(input);
      expect(sorted).toEqual(input);
      if (!sortedThroughout(sorted)) throw new Error(`case ${i}: ${JSON.stringify(sorted)} is not sorted`);
      if (hasIntegerLikeKey(input)) continue;
      withoutIntegerLikeKeys++;
      expect([i, JSON.stringify(sorted)]).toEqual([i, canonicalize(input)]);
    }
    expect(withoutIntegerLikeKeys).toBeGreaterThan(1000);
  });

  // `sorted[key] = …` would set the copy's prototype for the key "__proto__" (an own key of what
  // JSON.parse makes) instead of copying the member: lost silently with a primitive value (and the
  // stored text flagged canonical without it), the copy's prototype with an object value.
  it('keeps a "__proto__" key as a member, as JSON.parse made it', () => {
    for (const text of ['{"b":1,"__proto__":2}', '{"b":1,"__proto__":{"polluted":true}}']) {
      const sorted = sortedKeys(JSON.parse(text));
      expect(Object.getPrototypeOf(sorted)).toBe(Object.prototype);
      expect(JSON.stringify(sorted)).toBe(canonicalize(JSON.parse(text)));
    }
  });
});

describe('inCanonicalOrder', () => {
  type Launched = DomainEvent<'Launched', { zone: string; campaign: { name: string; budget: number }; accountId: string }>;

  it('sorts the data of the event, keeping its type and version, as a copy', () => {
    const event: Launched = { type: 'Launched', version: 3, data: { zone: 'eu', campaign: { name: 'n', budget: 5 }, accountId: 'acct_1' } };
    const sorted = inCanonicalOrder(event);
    expect(sorted).toEqual(event);
    expect(sorted.type).toBe('Launched');
    expect(sorted.version).toBe(3);
    expect(JSON.stringify(sorted.data)).toBe('{"accountId":"acct_1","campaign":{"budget":5,"name":"n"},"zone":"eu"}');
    expect(sorted).not.toBe(event);
    expect(Object.keys(event.data)).toEqual(['zone', 'campaign', 'accountId']);
    expect(Object.keys(event.data.campaign)).toEqual(['name', 'budget']);
  });
});

describe('the canonical order of what is appended', () => {
  it('sorts the metadata of a stored event, its version included', () => {
    const stored = toStoredEvent({ type: 'Launched', version: 2, data: { b: 1 } }, { requestId: 'req_1', mode: 'live', accountId: 'acct_1' });
    expect(JSON.stringify(stored.metadata)).toBe('{"accountId":"acct_1","mode":"live","requestId":"req_1","version":2}');
  });

  type Noted = DomainEvent<'Noted', { text: string; by: { name: string; id: string }; at: string }>;
  const NOTED = eventVersions<Noted>('note', { Noted: [] });
  const notes: Decider<string, Noted, number> = {
    initialState: 0,
    decide: (text) => [NOTED.event('Noted', { text, by: { name: 'n', id: 'u_1' }, at: '2026-01-01T00:00:00.000Z' })],
    evolve: (count) => count + 1,
  };

  it('appends what a decide makes in canonical order, and answers it in that order too', async () => {
    const store = SqliteEventStore.open(':memory:');
    try {
      const decided = await new AggregateRepository(store, notes, NOTED.upcast).execute('note-1', 'hello', { requestId: 'req_1', accountId: 'acct_1' });
      const [stored] = await store.readAll({ maxCount: 10 });
      const text = '{"at":"2026-01-01T00:00:00.000Z","by":{"id":"u_1","name":"n"},"text":"hello"}';
      expect(JSON.stringify(stored.data)).toBe(text);
      expect(JSON.stringify(stored.metadata)).toBe('{"accountId":"acct_1","requestId":"req_1","version":1}');
      expect(JSON.stringify(decided.recorded[0].data)).toBe(text);
      expect(JSON.stringify(decided.events[0].data)).toBe(text);
    } finally {
      await store.close();
    }
  });
});
