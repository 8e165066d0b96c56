import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DomainEvent } from '../decider';
import { EventVersions, storedVersion } from '../event-versions';

/** A stored event as the event store hands it back: the shape of every fixture file. */
export interface StoredEventFixture {
  id: string;
  streamId: string;
  type: string;
  revision: number;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  occurredAt: string;
}

export interface EventFixtureSuite<Event extends DomainEvent, State> {
  versions: EventVersions<Event>;
  /** `<Type>.v<N>.json`, and `<Type>.v<N>.<case>.json` for another recorded shape of the same version. */
  dir: string;
  evolve: (state: State, event: Event) => State;
  /** The state an event of this type is applied to (a creating event's: the empty state). */
  stateBefore: (type: Event['type']) => State;
  /** What the decider writes today, by fixture name (`DispatchRetried.v1`): must have the current fixture's fields. */
  written: Record<string, Event>;
}

/** A fixture file read as the services read a stored event: for building the state other fixtures apply to. */
export function fixtureEvent<Event extends DomainEvent>(versions: EventVersions<Event>, dir: string, name: string): Event {
  const fixture = JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as StoredEventFixture;
  return versions.upcast(fixture.type, fixture.data, storedVersion(fixture.metadata));
}

const FILE = /^(\w+)\.v(\d+)(?:\.([\w-]+))?\.json$/;
const nameOf = (type: string, version: number, label?: string) => `${type}.v${version}${label ? `.${label}` : ''}`;

/** The field names of a value, all the way down: what a shape change (a field renamed, added, dropped) alters. */
function fieldsOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.length ? [fieldsOf(value[0])] : [];
  if (value === null || typeof value !== 'object') return '*';
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, fieldsOf((value as Record<string, unknown>)[key])]),
  );
}

function holes(value: unknown, path = '$'): string[] {
  if (value === undefined || Number.isNaN(value)) return [path];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => holes(inner, `${path}.${key}`));
}

/**
 * Recorded stored events of every version of every event type, read the way the services read
 * them (version from the metadata, upcast to the current version): each older version must become
 * its current fixture, and `evolve` must take the result. A type added, or a version bumped,
 * without its fixtures fails here.
 */
export function describeEventFixtures<Event extends DomainEvent, State>(suite: EventFixtureSuite<Event, State>): void {
  const { versions, dir } = suite;
  const files = readdirSync(dir).filter((file) => file.endsWith('.json'));
  const fixtures = new Map(files.map((file) => [file.replace(/\.json$/, ''), JSON.parse(readFileSync(join(dir, file), 'utf8')) as StoredEventFixture]));
  const read = (fixture: StoredEventFixture) => versions.upcast(fixture.type, fixture.data, storedVersion(fixture.metadata));
  const cases = files.map((file) => {
    const [, type, version, label] = FILE.exec(file) ?? [];
    return { file, name: file.replace(/\.json$/, ''), type, version: Number(version), label };
  });

  describe(`${versions.aggregate} events: recorded fixtures of every version`, () => {
    it.each(versions.types.map((type) => [type, versions.currentVersion(type)] as const))('%s has a fixture of each of its versions 1..%i', (type, current) => {
      const missing = Array.from({ length: current }, (_, i) => nameOf(type, i + 1)).filter((name) => !fixtures.has(name));
      expect(missing).toEqual([]);
    });

    it('holds only fixtures of declared types and versions, each named for the event it stores', () => {
      const strays = cases.filter(({ type, version }) => !(versions.types as readonly string[]).includes(type) || !(version <= versions.currentVersion(type)));
      expect(strays.map((c) => c.file)).toEqual([]);
      const misnamed = cases.filter(({ name, type, version }) => fixtures.get(name)!.type !== type || storedVersion(fixtures.get(name)!.metadata) !== version);
      expect(misnamed.map((c) => c.file)).toEqual([]);
    });

    it.each(cases.map((c) => [c.name, c] as const))('%s reads as its current-version fixture, and evolve takes it', (_, { name, type, label }) => {
      const current = nameOf(type, versions.currentVersion(type), label);
      expect(fixtures.has(current)).toBe(true);
      const expected = fixtures.get(current)!;
      const event = read(fixtures.get(name)!);
      expect(event).toEqual({ type, version: versions.currentVersion(type), data: expected.data });

      const before = suite.stateBefore(type);
      const after = suite.evolve(before, event);
      expect(after).not.toEqual(before);
      expect(holes(after)).toEqual([]);
    });

    it.each(cases.filter((c) => c.version === versions.currentVersion(c.type)).map((c) => [c.name, c] as const))(
      '%s has the fields the decider writes today (a shape change needs a new version)',
      (name, { type }) => {
        const written = suite.written[name];
        expect(written).toBeDefined();
        expect({ type: written.type, version: written.version }).toEqual({ type, version: versions.currentVersion(type) });
        expect(fieldsOf(written.data)).toEqual(fieldsOf(fixtures.get(name)!.data));
      },
    );
  });
}
