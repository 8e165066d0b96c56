import { closeSync, openSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { GENESIS_HASH, toExportLine } from './export-line';
import { REDACTED_FIELDS } from './redaction';

/** Which events an export holds; the fields given must all hold. */
export interface ExportFilter {
  /** One stream, e.g. `dispatch-dsp_…`. */
  stream?: string;
  /** Streams named `<category>-…`, e.g. `dispatch`. */
  category?: string;
  /** Events whose metadata.accountId is this account, and the account's own stream. */
  account?: string;
  /** recorded_at at or after this instant (ISO 8601). */
  from?: string;
  /** recorded_at before this instant (ISO 8601). */
  to?: string;
}

export interface ExportManifest {
  format: 'campaign-ops-export/1';
  file: string;
  filter: ExportFilter;
  count: number;
  /** The position of the last exported event (null when none): the export holds nothing after it. */
  last_position: string | null;
  /** The position of the last event in the store when the export began: nothing after it was read. */
  read_up_to: string | null;
  final_hash: string;
  hash_rule: string;
  redacted: Array<{ type: string; field: string }>;
  exported_at: string;
}

/** Told as the export goes: events written, and how far through the store's positions (0..1). */
export type ProgressListener = (written: number, fraction: number) => void;

export const HASH_RULE = 'hash = hex(SHA-256(UTF-8(prev_hash + "\\n" + JCS(line without hash)))), JCS = RFC 8785; the first prev_hash is 64 zeros';

const PAGE = 2_000;
const FLUSH_CHARS = 1 << 20;

export const manifestFileOf = (file: string) => `${file}.manifest.json`;

/**
 * Writes the events the filter selects, in commit order, to `file` as a hash chain of JSON lines,
 * and the manifest beside it. Only what the store held when the export began is read (up to its
 * last position then), so an export of a running system is a snapshot. The file is written under
 * a temporary name and renamed at the end: a file with the final name is always complete.
 */
export async function exportEvents(store: EventStore, filter: ExportFilter, file: string, onProgress?: ProgressListener): Promise<ExportManifest> {
  const normalized = normalizeFilter(filter);
  const upTo = await store.lastPosition();
  const partial = `${file}.partial`;
  const fd = openSync(partial, 'w');
  let prevHash = GENESIS_HASH;
  let count = 0;
  let lastPosition: string | null = null;
  // Lines are kept apart and joined once per write: appending each to one string builds a rope
  // that the write must flatten, and garbage for every line.
  let lines: string[] = [];
  let buffered = 0;
  const flush = () => {
    if (lines.length === 0) return;
    lines.push('');
    writeSync(fd, lines.join('\n'));
    lines = [];
    buffered = 0;
  };
  try {
    const keep = selector(normalized);
    for await (const page of pages(store, normalized, upTo)) {
      for (const event of page) {
        if (!keep(event)) continue;
        const { line, text } = toExportLine(event, prevHash);
        lines.push(text);
        buffered += text.length;
        prevHash = line.hash;
        lastPosition = event.position;
        count++;
      }
      if (buffered >= FLUSH_CHARS) flush();
      const last = page[page.length - 1];
      if (last) onProgress?.(count, fractionOf(last.position, upTo));
    }
    flush();
  } finally {
    closeSync(fd);
  }
  renameSync(partial, file);
  const manifest: ExportManifest = {
    format: 'campaign-ops-export/1',
    file,
    filter: normalized,
    count,
    last_position: lastPosition,
    read_up_to: upTo,
    final_hash: prevHash,
    hash_rule: HASH_RULE,
    redacted: REDACTED_FIELDS.map(({ type, path }) => ({ type, field: path.join('.') })),
    exported_at: new Date().toISOString(),
  };
  writeFileSync(manifestFileOf(file), `${JSON.stringify(manifest, null, 2)}\n`);
  onProgress?.(count, 1);
  return manifest;
}

function normalizeFilter(filter: ExportFilter): ExportFilter {
  const instant = (value: string | undefined, name: string) => {
    if (value === undefined) return undefined;
    const time = Date.parse(value);
    if (Number.isNaN(time)) throw new Error(`--${name} is not an ISO 8601 time: ${value}`);
    return new Date(time).toISOString();
  };
  if (filter.category !== undefined && !/^[a-z][a-z0-9_]*$/.test(filter.category)) throw new Error(`--category is a stream category such as dispatch, not ${filter.category}`);
  const normalized: ExportFilter = { ...filter, from: instant(filter.from, 'from'), to: instant(filter.to, 'to') };
  return Object.fromEntries(Object.entries(normalized).filter(([, value]) => value !== undefined));
}

export function selector(filter: ExportFilter): (event: RecordedEvent) => boolean {
  const { account, from, to } = filter;
  const accountStream = account === undefined ? undefined : `account-${account}`;
  return (event) =>
    (account === undefined || event.metadata['accountId'] === account || event.streamId === accountStream) &&
    (from === undefined || event.occurredAt >= from) &&
    (to === undefined || event.occurredAt < to);
}

/** The store's events in commit order, page by page, up to `upTo`: one stream's, a category's or everyone's. */
export async function* pages(store: EventStore, filter: ExportFilter, upTo: string | null): AsyncGenerator<RecordedEvent[]> {
  if (upTo === null) return;
  const limit = BigInt(upTo);
  const within = (page: RecordedEvent[]) => page.filter((event) => BigInt(event.position) <= limit);
  if (filter.stream !== undefined) {
    for (let fromRevision = 0; ; fromRevision += PAGE) {
      const page = await store.readStream(filter.stream, { fromRevision, maxCount: PAGE });
      const kept = within(page);
      yield kept;
      if (page.length < PAGE || kept.length < page.length) return;
    }
  }
  const streamPrefixes = filter.category === undefined ? undefined : [`${filter.category}-`];
  let fromPosition: string | undefined;
  for (;;) {
    const page = await store.readAll({ fromPosition, maxCount: PAGE, streamPrefixes });
    const kept = within(page);
    yield kept;
    if (page.length < PAGE || kept.length < page.length) return;
    fromPosition = page[page.length - 1].position;
  }
}

/** How far `position` is through the store, 0..1 (positions only grow; EventStoreDB's are large). */
export function fractionOf(position: string, upTo: string | null): number {
  if (upTo === null || upTo === '0') return 1;
  return Math.min(1, Number((BigInt(position) * 10_000n) / BigInt(upTo)) / 10_000);
}
