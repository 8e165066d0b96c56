import canonicalize from 'canonicalize';
import { sortedKeys } from '@campaign-ops/event-sourcing';
import { stringifiesCanonically } from './canonical-json';
import { SeededRandom, seededRandom } from './testing/seeded-random';

const randomness = seededRandom;
type Random = SeededRandom;

const STRING_PIECES = [
  'a',
  'Z',
  ' ',
  'é',
  '✓',
  '😀',
  '\ud83d',
  '\ude00',
  '\u0000',
  '\u001f',
  '\u007f',
  '\u2028',
  '"',
  '\\',
  '/',
  '\n',
  '\t',
  '"idempotencyKey":"x"',
  '</script>',
];
const NUMBERS = [0, -0, 1, -1, 1.5, 0.1, 1 / 3, 1e21, 1e-7, 1e20, -1e-7, 5e-324, Number.MAX_VALUE, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 123456789.125];
/** Integer-like ones ("1", "10", "4294967294": JavaScript lists those first, in numeric order) and others that look like them ("01", "-1", "4294967295"). */
const KEYS = [
  '',
  'a',
  'b',
  'B',
  '_',
  'aa',
  'ab',
  'a b',
  'é',
  '😀',
  '\uff01',
  '\ud83d',
  '\u0000',
  '"',
  '\\',
  '1',
  '2',
  '10',
  '01',
  '0',
  '-1',
  '1.5',
  '4294967294',
  '4294967295',
  '__proto__',
  'constructor',
  'toString',
  'toJSON',
  'hasOwnProperty',
  'idempotencyKey',
];
const isIntegerLike = (key: string) => /^(0|[1-9]\d*)$/.test(key) && Number(key) < 2 ** 32 - 1;

class Point {
  constructor(readonly x = 1) {}
}
/** What JSON.stringify and canonicalize may write differently, or not at all. */
const WEIRD: ReadonlyArray<() => unknown> = [
  () => undefined,
  () => NaN,
  () => Infinity,
  () => -Infinity,
  () => new Date(0),
  () => () => 1,
  () => Symbol('s'),
  () => 10n,
  () => new Point(),
  () => new Map([['a', 1]]),
  () => new String('s'),
  () => new Number(1),
  () => new Uint8Array(2),
  () => ({ toJSON: () => 'x' }),
  () => Object.create({ inherited: 1 }),
];

interface Shape {
  /** Chance of a value outside JSON (WEIRD) at each place. */
  weird: number;
  /** Whether arrays may have holes. */
  holes?: boolean;
  /** Whether objects list their keys sorted (else in a random order; then JavaScript still lists integer-like ones first). */
  sorted?: boolean;
  keys?: readonly string[];
}

function string(random: Random): string {
  return Array.from({ length: random.int(5) }, () => random.pick(STRING_PIECES)).join('');
}

function value(random: Random, shape: Shape, depth = 0): unknown {
  if (random.chance(shape.weird)) return random.pick(WEIRD)();
  switch (random.int(depth >= 4 ? 4 : 7)) {
    case 0:
      return string(random);
    case 1:
      return random.chance(0.5) ? random.pick(NUMBERS) : (random.chance(0.5) ? -1 : 1) * random.int(1_000_000) * 10 ** (random.int(30) - 15);
    case 2:
      return random.pick([true, false]);
    case 3:
      return null;
    case 4: {
      const items = Array.from({ length: random.int(4) }, () => value(random, shape, depth + 1));
      if (shape.holes && random.chance(0.2)) items.length += 1 + random.int(2);
      return items;
    }
    default:
      return object(random, shape, depth);
  }
}

function object(random: Random, shape: Shape, depth: number): Record<string, unknown> {
  const keys = [...new Set(Array.from({ length: random.int(6) }, () => (random.chance(0.3) ? string(random) : random.pick(shape.keys ?? KEYS))))];
  if (shape.sorted || random.chance(0.5)) keys.sort();
  const entries = keys.map((key) => [key, value(random, shape, depth + 1)] as const);
  // Own data properties, "__proto__" too (as JSON.parse makes them); now and then without a prototype.
  if (random.chance(0.15)) {
    const bare: Record<string, unknown> = Object.create(null);
    for (const [key, inner] of entries) bare[key] = inner;
    return bare;
  }
  return Object.fromEntries(entries);
}

/** Whether every object in the value lists its keys sorted (UTF-16 code units), as canonicalize writes them. */
function keysListedSorted(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(keysListedSorted);
  if (value === null || typeof value !== 'object') return true;
  const keys = Object.keys(value);
  return keys.join('\u0001') === [...keys].sort().join('\u0001') && Object.values(value).every(keysListedSorted);
}

function hasIntegerLikeKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasIntegerLikeKey);
  if (value === null || typeof value !== 'object') return false;
  return Object.keys(value).some(isIntegerLike) || Object.values(value).some(hasIntegerLikeKey);
}

const CASES = 3000;
const show = (v: unknown) => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

describe('stringifiesCanonically', () => {
  it('answers true only where JSON.stringify writes what canonicalize (RFC 8785) writes, for values of every kind', () => {
    const random = randomness(0x5eed_0001);
    let yes = 0;
    let no = 0;
    for (let i = 0; i < CASES; i++) {
      const v = value(random, { weird: 0.04 });
      if (!stringifiesCanonically(v)) {
        no++;
        continue;
      }
      yes++;
      const [stringified, canonical] = [JSON.stringify(v), canonicalize(v)];
      if (stringified !== canonical) throw new Error(`case ${i}: true for ${stringified}, whose JCS is ${canonical}`);
    }
    // Both answers were tried often, so the property says something.
    expect(yes).toBeGreaterThan(CASES / 5);
    expect(no).toBeGreaterThan(CASES / 5);
  });

  it('answers exactly whether the texts are the same, for JSON values (nothing outside JSON)', () => {
    const random = randomness(0x5eed_0002);
    for (let i = 0; i < CASES; i++) {
      const v = value(random, { weird: 0 });
      const same = JSON.stringify(v) === canonicalize(v);
      if (stringifiesCanonically(v) !== same) throw new Error(`case ${i}: ${stringifiesCanonically(v)} for ${show(v)} (JCS ${canonicalize(v)})`);
      expect(same).toBe(keysListedSorted(v));
    }
  });

  it('answers true for what a decide makes of JSON (sortedKeys), unless an object has an integer-like key', () => {
    const random = randomness(0x5eed_0003);
    // Not "__proto__": sortedKeys loses that key (see canonical-order.spec.ts).
    const keys = KEYS.filter((key) => key !== '__proto__');
    let tried = 0;
    for (let i = 0; i < CASES; i++) {
      const v = sortedKeys(value(random, { weird: 0, keys }));
      if (hasIntegerLikeKey(v)) continue;
      tried++;
      if (!stringifiesCanonically(v)) throw new Error(`case ${i}: false for ${show(v)}`);
      expect(JSON.stringify(v)).toBe(canonicalize(v));
    }
    expect(tried).toBeGreaterThan(CASES / 2);
  });

  it('answers true for a JSON text parsed from its JCS, where no integer-like key is out of place', () => {
    const random = randomness(0x5eed_0004);
    for (let i = 0; i < CASES; i++) {
      const canonical = canonicalize(value(random, { weird: 0 }))!;
      const parsed = JSON.parse(canonical);
      expect([i, stringifiesCanonically(parsed)]).toEqual([i, JSON.stringify(parsed) === canonical]);
      if (!hasIntegerLikeKey(parsed)) expect([i, stringifiesCanonically(parsed)]).toEqual([i, true]);
    }
  });

  it('when true, the stored text (JSON.stringify) is its own JCS, arrays with holes too', () => {
    // What the event store relies on: it flags the text, and an export passes the text through.
    // (canonicalize itself writes a hole as nothing, "[,1]", where JSON.stringify writes null.)
    const random = randomness(0x5eed_0005);
    for (let i = 0; i < CASES; i++) {
      const v = value(random, { weird: 0.03, holes: true });
      if (!stringifiesCanonically(v)) continue;
      const text = JSON.stringify(v);
      if (canonicalize(JSON.parse(text)) !== text) throw new Error(`case ${i}: true for ${text}, whose JCS is ${canonicalize(JSON.parse(text))}`);
    }
  });

  it.each<[string, unknown]>([
    ['an empty object', {}],
    ['an empty array', []],
    ['a string with escapes, quotes and unicode', 'a"b\\c\n\u0000\u2028é😀\ud800'],
    ['zero', 0],
    ['minus zero (written 0 by both)', -0],
    ['1e21 (written 1e+21 by both)', 1e21],
    ['a float', 0.1 + 0.2],
    ['null', null],
    ['true', true],
    ['sorted keys, at every depth', { a: 1, b: [{ c: null, d: 'é' }, [{ e: {}, f: [] }]] }],
    ['an integer-like key before others', { '1': 1, a: 2 }],
    ['integer-like keys whose numeric order is also their text order', { '1': 1, '2': 2, '3': 3 }],
    ['the empty key first', { '': 1, a: 2 }],
    ['capitals before small letters', { A: 1, B: 2, a: 3 }],
    ['keys that look integer-like and are not ("01", "-1", "4294967295")', { '-1': 1, '01': 2, '4294967295': 3 }],
    ['keys in UTF-16 order, which is not code point order', { '😀': 1, '\uff01': 2 }],
    ['"__proto__" as JSON.parse makes it (an own key)', JSON.parse('{"__proto__":{"a":1},"b":2}')],
    ['an object without a prototype', Object.assign(Object.create(null), { a: 1, b: 2 })],
    ['a key "toJSON" that is no function', { toJSON: 1 }],
  ])('answers true for %s, whose JSON.stringify is its JCS', (_name, v) => {
    expect(stringifiesCanonically(v)).toBe(true);
    expect(JSON.stringify(v)).toBe(canonicalize(v));
  });

  it.each<[string, unknown]>([
    ['unsorted keys', { b: 1, a: 2 }],
    ['unsorted keys deep inside', [{ a: [{ c: 1, b: 2 }] }]],
    ['integer-like keys JavaScript lists before a smaller key ("10" after "9")', { '10': 1, '9': 2 }],
    ['an integer-like key JavaScript lists before the empty key', { '': 1, '1': 2 }],
    ['an integer-like key JavaScript lists before a smaller key ("!")', { '!': 1, '1': 2 }],
    ['keys in code point order, which is not UTF-16 order', { '\uff01': 1, '😀': 2 }],
    ['an undefined member', { a: undefined }],
    ['an undefined item', [undefined]],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity inside', { a: [-Infinity] }],
    ['a Date', new Date(0)],
    ['a Date inside', { at: new Date(0) }],
    ['a function', () => 1],
    ['a function member', { a: () => 1 }],
    ['a toJSON method', { toJSON: () => 'x' }],
    ['a symbol', Symbol('s')],
    ['a bigint', 1n],
    ['a class instance', new Point()],
    ['a Map', new Map()],
    ['a boxed string', new String('x')],
    ['an object with an inherited member', Object.create({ a: 1 })],
    ['undefined', undefined],
  ])('answers false for %s', (_name, v) => {
    expect(stringifiesCanonically(v)).toBe(false);
  });
});
