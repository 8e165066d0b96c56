// How the SQLite event store keeps events: the table and its columns, rows to and from the
// port's events, and the SQL and checks appends and reads share.
import Database from 'better-sqlite3';
import { EventToAppend, ExpectedRevision, RecordedEvent } from './event-store.port';
import { stringifiesCanonically } from './canonical-json';

/*
 * Why subscriptions may follow `position > checkpoint` without ever missing an event:
 * SQLite admits a single writer per database file, and every append takes the write lock up front
 * (BEGIN IMMEDIATE) and holds it until commit. A position is therefore assigned and committed
 * before any other writer, in this process or another one, can assign a higher position: readers
 * never see position n+1 while n is still uncommitted. (In PostgreSQL, for contrast, concurrent
 * transactions draw sequence values and commit in any order, so following a sequence skips events.)
 * A position of a rolled-back append may be handed out again, but it was never visible to anyone.
 */
export const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position    INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id    TEXT    NOT NULL UNIQUE,
    stream_id   TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    metadata    TEXT    NOT NULL,
    occurred_at TEXT    NOT NULL,
    canonical   INTEGER,
    UNIQUE (stream_id, revision)
  )`;

/**
 * `canonical` is 1 when the stored data and metadata texts are also their RFC 8785 canonical form
 * (JCS): what an export hashes, so that it passes them through rather than parsing and
 * canonicalizing every event (most of its time otherwise). The event-sourcing layer appends events
 * with their keys in canonical order (inCanonicalOrder), so their JSON is canonical as it is; each
 * append checks (stringifiesCanonically). Events stored before the column existed have it NULL, like any other
 * event whose text is not canonical, and readAllCanonical canonicalizes those as it reads.
 */
const CANONICAL_COLUMN = 'canonical';

/** Every column but the canonical flag: what reads that return RecordedEvents select. */
export const EVENT_COLUMNS = 'position, event_id, stream_id, revision, type, data, metadata, occurred_at';
/** readAllForReplay's: the metadata as text (replayMetadata reads its version). */
export const REPLAY_COLUMNS = 'position, stream_id, revision, type, data, metadata';
/** readAllCanonical's: the texts and whether they are canonical. */
export const CANONICAL_READ_COLUMNS = 'position, event_id, stream_id, revision, type, data, metadata, occurred_at, canonical';

export interface EventRow {
  position: number;
  event_id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  occurred_at: string;
}

export type StoredEventRef = Pick<EventRow, 'position' | 'stream_id' | 'revision'>;

/** `{ version }` metadata, one frozen object per version for every event a replay reads (instead of one each). */
export const VERSION_METADATA: Array<Readonly<{ version: number }>> = [];
export function versionMetadata(version: number): Readonly<{ version: number }> {
  if (!(version >= 0 && version < 64)) return { version };
  return (VERSION_METADATA[version] ??= Object.freeze({ version }));
}

/**
 * A whole-number `version` written last in the top-level object, as JSON.stringify writes the
 * metadata every event is appended with (`{..., "version": 1}`). A `{` or `,` before its quote
 * makes it a key of the object the last `}` closes (inside a string, that quote would end it).
 */
const LAST_VERSION = /[{,]"version":(\d{1,9})\}$/;

/**
 * What a replay needs of an event's metadata text: `{ version }` alone when its version is a whole
 * number, else the metadata whole. Found without parsing where the version is written last (a
 * regular expression over the text's end costs a tenth of SQLite's JSON functions or JSON.parse).
 */
export function replayMetadata(text: string): Readonly<Record<string, unknown>> {
  const last = LAST_VERSION.exec(text);
  if (last) return versionMetadata(Number(last[1]));
  const metadata = JSON.parse(text) as Record<string, unknown>;
  return Number.isInteger(metadata.version) ? versionMetadata(metadata.version as number) : metadata;
}

export interface SerializedEvent {
  data: string;
  metadata: string;
  /** Whether both texts are their canonical form (JCS) too. */
  canonical: boolean;
}

export function serializeEvent(event: EventToAppend): SerializedEvent {
  const data = JSON.stringify(event.data);
  const metadata = JSON.stringify(event.metadata ?? {});
  return { data, metadata, canonical: stringifiesCanonically(event.data) && stringifiesCanonically(event.metadata ?? {}) };
}

/**
 * Adds the `canonical` column to a store made before it (its events keep it NULL). In one
 * IMMEDIATE transaction, so that two processes opening the same old file add it once.
 */
export function addCanonicalColumn(db: Database.Database): void {
  const missing = () => !(db.pragma('table_info(events)') as Array<{ name: string }>).some((column) => column.name === CANONICAL_COLUMN);
  if (!missing()) return;
  db.transaction(() => {
    if (missing()) db.exec(`ALTER TABLE events ADD COLUMN ${CANONICAL_COLUMN} INTEGER`);
  }).immediate();
}

/** Whether these stored events are exactly what this append would have written: then it already ran. */
export function isSameAppend(streamId: string, stored: (StoredEventRef | undefined)[], expected: ExpectedRevision): stored is StoredEventRef[] {
  const first = stored[0]?.revision;
  if (first === undefined) return false;
  const inPlace = stored.every((event, i) => event?.stream_id === streamId && event.revision === first + i);
  if (!inPlace) return false;
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return first === 0;
    case 'stream_exists':
      return first > 0;
    default:
      return first === expected + 1;
  }
}

/** The SQL condition keeping the streams of `prefixes` (none: every stream); its parameters from prefixParameters. */
export function prefixFilter(prefixes: string[] | undefined): string {
  // length(?) counts characters as substr does; JavaScript's length counts UTF-16 code units.
  return prefixes ? `AND (${prefixes.map(() => 'substr(stream_id, 1, length(?)) = ?').join(' OR ')})` : '';
}

export function prefixParameters(prefixes: string[] | undefined): string[] {
  return (prefixes ?? []).flatMap((prefix) => [prefix, prefix]);
}

export function satisfies(expected: ExpectedRevision, actual: number | null): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return actual === null;
    case 'stream_exists':
      return actual !== null;
    default:
      return actual === expected;
  }
}

export function parsePosition(position: string | undefined): number {
  if (position === undefined) return 0;
  const parsed = Number(position);
  if (!/^\d+$/.test(position) || !Number.isSafeInteger(parsed)) throw new Error(`not an event store position: ${position}`);
  return parsed;
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    type: row.type,
    revision: row.revision,
    position: String(row.position),
    data: JSON.parse(row.data),
    metadata: JSON.parse(row.metadata),
    occurredAt: row.occurred_at,
  };
}
