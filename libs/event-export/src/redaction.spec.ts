import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import canonicalize from 'canonicalize';
import { RecordedEvent } from '@campaign-ops/event-store';
import { REDACTED, REDACTED_FIELDS, redactedCanonicalData, redactedData } from './redaction';
import { SeededRandom, seededRandom } from '@campaign-ops/testing/event-store';

/**
 * A safety net for exports: every stored event type has recorded fixtures (libs/<domain>/src/
 * fixtures/events/<aggregate>/<Type>.v<n>.json, one per version). A field whose name says it may
 * be a secret must be either redacted (REDACTED_FIELDS) or listed here with why it may leave, so a
 * new secret field fails this spec instead of reaching an auditor's export.
 */
const SECRET_LOOKING = /secret|token|password|passwd|key|hash|credential|cookie|signature|auth(?!orized)/i;

/** Fields that look secret by name and are not, each with why. */
const MAY_BE_EXPORTED: ReadonlyArray<{ type: string; path: string; why: string }> = [
  { type: 'ApiKeyIssued', path: 'keyId', why: 'the key record’s public id (key_…), shown in the Admin API' },
  { type: 'ApiKeyRevoked', path: 'keyId', why: 'the key record’s public id (key_…)' },
  { type: 'ConnectionRequested', path: 'oauth', why: 'the OAuth round: its expiry and the state’s hash, no token' },
  { type: 'OAuthRoundStarted', path: 'oauth', why: 'the OAuth round: its expiry and the state’s hash, no token' },
  { type: 'ConnectionRequested', path: 'oauth.stateHash', why: 'SHA-256 of a random 256-bit OAuth state that expires; not reversible' },
  { type: 'OAuthRoundStarted', path: 'oauth.stateHash', why: 'SHA-256 of a random 256-bit OAuth state that expires; not reversible' },
  { type: 'ConnectionActivated', path: 'stateHash', why: 'SHA-256 of the spent OAuth state; not reversible' },
  { type: 'ConnectionReauthorized', path: 'stateHash', why: 'SHA-256 of the spent OAuth state; not reversible' },
  { type: 'AccountOpened', path: 'oauthRedirectUris', why: "the partner's own URLs its OAuth rounds may send people back to (no query, no credentials)" },
  {
    type: 'AccountSettingsChanged',
    path: 'oauthRedirectUris',
    why: "the partner's own URLs its OAuth rounds may send people back to (no query, no credentials)",
  },
];

const ROOT = resolve(__dirname, '../../..');

/** Every product event fixture (the decider's own sample aggregate left out). */
function fixtures(): Array<{ file: string; event: RecordedEvent }> {
  const found: Array<{ file: string; event: RecordedEvent }> = [];
  for (const lib of readdirSync(join(ROOT, 'libs'))) {
    const eventsDir = join(ROOT, 'libs', lib, 'src', 'fixtures', 'events');
    let aggregates: string[];
    try {
      aggregates = readdirSync(eventsDir);
    } catch {
      continue;
    }
    for (const aggregate of aggregates.filter((name) => name !== 'note')) {
      for (const name of readdirSync(join(eventsDir, aggregate)).filter((file) => file.endsWith('.json'))) {
        const file = join('libs', lib, 'src', 'fixtures', 'events', aggregate, name);
        found.push({ file, event: JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as RecordedEvent });
      }
    }
  }
  return found;
}

function pathsOf(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => [[...prefix, key], ...pathsOf(inner, [...prefix, key])]);
}

const valueAt = (data: unknown, path: readonly string[]) => path.reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], data);

describe('what an export may carry', () => {
  const all = fixtures();

  it('finds the recorded fixtures of every aggregate', () => {
    expect(new Set(all.map(({ file }) => file.split('/')[5]))).toEqual(new Set(['account', 'connection', 'credit-ledger', 'dispatch', 'webhook-endpoint']));
    expect(all.length).toBeGreaterThanOrEqual(20);
  });

  it('redacts every field whose name looks secret, or lists why it may leave', () => {
    const unexplained: string[] = [];
    for (const { file, event } of all) {
      // Metadata is exported as stored: nothing in it may look secret at all.
      for (const path of pathsOf(event.metadata)) {
        if (SECRET_LOOKING.test(path[path.length - 1])) unexplained.push(`${file}: ${event.type} metadata.${path.join('.')}`);
      }
      for (const path of pathsOf(event.data)) {
        if (!SECRET_LOOKING.test(path[path.length - 1])) continue;
        const joined = path.join('.');
        const redacted = REDACTED_FIELDS.some((field) => field.type === event.type && field.path.join('.') === joined);
        const allowed = MAY_BE_EXPORTED.some((field) => field.type === event.type && field.path === joined);
        if (!redacted && !allowed) unexplained.push(`${file}: ${event.type}.${joined}`);
      }
    }
    expect(unexplained).toEqual([]);
  });

  it('replaces each redacted field of the fixtures, and leaves the rest as stored', () => {
    for (const { type, path } of REDACTED_FIELDS) {
      const withField = all.filter(({ event }) => event.type === type && valueAt(event.data, path) !== undefined && valueAt(event.data, path) !== null);
      expect([type, withField.length > 0]).toEqual([type, true]);
      for (const { event } of withField) {
        const data = redactedData(event);
        expect(valueAt(data, path)).toBe(REDACTED);
        for (const other of pathsOf(event.data).filter((p) => p.join('.') !== path.join('.') && !path.join('.').startsWith(`${p.join('.')}.`))) {
          expect(valueAt(data, other)).toEqual(valueAt(event.data, other));
        }
      }
    }
  });
});

const randomness = seededRandom;
type Random = SeededRandom;

describe('redaction of canonical text (what an export reads)', () => {
  const FIELDS = [...new Set(REDACTED_FIELDS.flatMap(({ path }) => path))];
  /** The listed names, keys that end or begin with one, and others. */
  const KEYS = [...FIELDS, ...FIELDS.flatMap((field) => [`x${field}`, `${field}s`, `_${field}`]), 'a', 'b', 'é', '', '1', '10', 'null'];
  /** Strings that hold what a listed key looks like in a text: escaped in JCS, they must not count as keys. */
  const STRINGS = [
    '',
    'x',
    'null',
    'é😀',
    '\\',
    '"',
    ...FIELDS.flatMap((field) => [field, `"${field}":"x"`, `"${field}":null`, `{"${field}":1}`, `\\"${field}\\":`]),
  ];
  /** What a listed field may hold: nothing to hide (null) or a value of any kind. */
  const VALUES: ReadonlyArray<() => unknown> = [
    () => null,
    () => 'secret-1',
    () => '',
    () => 'null',
    () => 0,
    () => 7.5,
    () => false,
    () => ({ idempotencyKey: 'inner' }),
    () => ({}),
    () => [null],
    () => [],
  ];

  function value(random: Random, depth: number): unknown {
    switch (random.int(depth >= 3 ? 4 : 6)) {
      case 0:
        return random.pick(STRINGS);
      case 1:
        return random.pick([0, -1, 1.5, 1e21]);
      case 2:
        return random.pick([true, false]);
      case 3:
        return null;
      case 4:
        return Array.from({ length: random.int(3) }, () => value(random, depth + 1));
      default:
        return object(random, depth + 1);
    }
  }

  function object(random: Random, depth: number): Record<string, unknown> {
    const data: Record<string, unknown> = {};
    for (let i = random.int(5); i > 0; i--) data[random.pick(KEYS)] = random.chance(0.3) ? random.pick(VALUES)() : value(random, depth);
    return data;
  }

  /** Random data for the type, its listed field set at its path (or not), to null or to a value, often. */
  function dataFor(random: Random, path: readonly string[]): Record<string, unknown> {
    const data = object(random, 0);
    if (random.chance(0.8)) {
      let at = data;
      for (const key of path.slice(0, -1)) {
        // Now and then the parent is no object (null, a string, an array): then nothing is there to redact.
        if (random.chance(0.1)) {
          at[key] = random.pick([null, 'x', [{ [path[path.length - 1]]: 'in-array' }]]);
          return data;
        }
        at = at[key] = typeof at[key] === 'object' && at[key] !== null && !Array.isArray(at[key]) ? (at[key] as Record<string, unknown>) : object(random, 1);
      }
      at[path[path.length - 1]] = random.chance(0.4) ? null : random.pick(VALUES)();
    }
    return data;
  }

  const TYPES = [...REDACTED_FIELDS, { type: 'AccountOpened', path: ['idempotencyKey'] }];

  it.each(TYPES)('answers the JCS of redactedData for random data of $type', ({ type, path }) => {
    const random = randomness([...type].reduce((seed, char) => Math.imul(seed, 31) + char.charCodeAt(0), 7));
    let redacted = 0;
    let asIs = 0;
    for (let i = 0; i < 1500; i++) {
      const text = canonicalize(dataFor(random, path))!;
      const expected = canonicalize(redactedData({ type, data: JSON.parse(text) }))!;
      const actual = redactedCanonicalData({ type, data: text });
      if (actual !== expected) throw new Error(`case ${i} of ${type}: ${text} gave ${actual}, not ${expected}`);
      if (actual === text) asIs++;
      else redacted++;
    }
    // Both ways were taken often (a type not listed is never redacted).
    expect(asIs).toBeGreaterThan(100);
    if (type === 'AccountOpened') expect(redacted).toBe(0);
    else expect(redacted).toBeGreaterThan(100);
  });

  it.each<[string, string, Record<string, unknown>, string]>([
    ['a null field', 'DispatchAccepted', { idempotencyKey: null, n: 1 }, '{"idempotencyKey":null,"n":1}'],
    ['no field', 'DispatchAccepted', { n: 1 }, '{"n":1}'],
    ['a field with a value', 'DispatchAccepted', { idempotencyKey: 'k', n: 1 }, `{"idempotencyKey":"${REDACTED}","n":1}`],
    ['an empty string, which is a value', 'DispatchAccepted', { idempotencyKey: '' }, `{"idempotencyKey":"${REDACTED}"}`],
    ['the string "null", which is a value', 'DispatchAccepted', { idempotencyKey: 'null' }, `{"idempotencyKey":"${REDACTED}"}`],
    ['zero and false, which are values', 'WebhookEndpointCreated', { sealedSecret: 0, a: false }, `{"a":false,"sealedSecret":"${REDACTED}"}`],
    ['an object value', 'ApiKeyIssued', { keyHash: { sha256: 'h' } }, `{"keyHash":"${REDACTED}"}`],
    [
      'the field in a string, escaped',
      'DispatchAccepted',
      { idempotencyKey: null, note: '"idempotencyKey":"x"' },
      '{"idempotencyKey":null,"note":"\\"idempotencyKey\\":\\"x\\""}',
    ],
    [
      'a key that ends with the field name',
      'DispatchAccepted',
      { xidempotencyKey: 'kept', idempotencyKey: null },
      '{"idempotencyKey":null,"xidempotencyKey":"kept"}',
    ],
    ['a key that ends with a quote and the field name', 'DispatchAccepted', { 'x"idempotencyKey': 'kept' }, '{"x\\"idempotencyKey":"kept"}'],
    [
      'the same name nested elsewhere, with a value',
      'DispatchAccepted',
      { a: { idempotencyKey: 'kept' }, idempotencyKey: null },
      '{"a":{"idempotencyKey":"kept"},"idempotencyKey":null}',
    ],
    [
      'a value after a null of the same name elsewhere',
      'DispatchAccepted',
      { a: { idempotencyKey: null }, idempotencyKey: 'k' },
      `{"a":{"idempotencyKey":null},"idempotencyKey":"${REDACTED}"}`,
    ],
    [
      'a nested field with a value, the same name at the top',
      'DispatchCharged',
      { dispatch: { idempotencyKey: 'k', dispatchId: 'd' }, idempotencyKey: 'top' },
      `{"dispatch":{"dispatchId":"d","idempotencyKey":"${REDACTED}"},"idempotencyKey":"top"}`,
    ],
    ['a nested null field', 'DispatchCharged', { dispatch: { idempotencyKey: null } }, '{"dispatch":{"idempotencyKey":null}}'],
    ['a parent that is no object', 'DispatchCharged', { dispatch: [{ idempotencyKey: 'in-array' }] }, '{"dispatch":[{"idempotencyKey":"in-array"}]}'],
  ])('%s (%s)', (_name, type, data, expected) => {
    const text = canonicalize(data)!;
    expect(redactedCanonicalData({ type, data: text })).toBe(expected);
    expect(redactedCanonicalData({ type, data: text })).toBe(canonicalize(redactedData({ type, data })));
  });
});
