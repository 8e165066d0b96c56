import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RecordedEvent } from '@campaign-ops/event-store';
import { REDACTED, REDACTED_FIELDS, redactedData } from './redaction';

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
