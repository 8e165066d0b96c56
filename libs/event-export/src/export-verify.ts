import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import canonicalize from 'canonicalize';
import { EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { ExportManifest, manifestFileOf, ProgressListener } from './event-export';
import { selector } from './export-filter';
import { pages } from './prepared-pages';
import { ExportLine, GENESIS_HASH, LINE_FIELDS, sealLine } from './export-line';
import { redactedData } from './redaction';

export type VerifyResult =
  | {
      ok: true;
      lines: number;
      final_hash: string;
      manifest: 'matches' | 'absent';
      checked_against_store: boolean;
      /**
       * Whether the store was also walked for the manifest's selection (its filter, up to its
       * read_up_to): then no event of that selection is missing from the file. The manifest is not
       * sealed by the chain: compare its final_hash, count and read_up_to with those recorded when
       * the export was made.
       */
      complete_against_store: boolean;
      /** The selection the store was walked for (complete_against_store), as the manifest states it. */
      selection?: { filter: ExportManifest['filter']; read_up_to: string | null };
    }
  | { ok: false; line: number | null; reason: string };

export interface VerifyOptions {
  /** Verify a file whose manifest is gone (the chain and the lines only: a cut-off end cannot be told). Default false: no manifest, no pass. */
  allowMissingManifest?: boolean;
}

/** Lines are checked against windows of their streams, read once each: this many streams' windows are kept. */
const STREAM_CACHE_SIZE = 10_000;
const WINDOW = 1_000;

/** The lines of a file, split on "\n" only (a stray "\r" is content, and fails the line), numbered from 1. */
async function* linesOf(file: string): AsyncGenerator<{ number: number; text: string }> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let number = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    const text = rest + decoder.write(chunk as Buffer);
    const parts = text.split('\n');
    rest = parts.pop()!;
    for (const part of parts) yield { number: ++number, text: part };
  }
  rest += decoder.end();
  // A file ends with a newline; anything after the last one is a line without it.
  if (rest !== '') yield { number: ++number, text: rest + '\u0000no newline' };
}

/** Why a line's text is not a line of an export whose previous hash is `prevHash`, or null when it is. */
function chainFault(text: string, prevHash: string): { line?: ExportLine; fault: string | null } {
  let line: ExportLine;
  try {
    line = JSON.parse(text) as ExportLine;
  } catch {
    return { fault: 'not a JSON line (or the file does not end with a newline)' };
  }
  if (typeof line !== 'object' || line === null || Array.isArray(line)) return { fault: 'not a JSON object' };
  const fields = Object.keys(line);
  if (fields.join(',') !== LINE_FIELDS.join(',')) return { fault: `fields are ${fields.join(', ')}; expected ${LINE_FIELDS.join(', ')}` };
  const wrongType = typeOfFields(line);
  if (wrongType) return { fault: wrongType };
  if (line.prev_hash !== prevHash) return { fault: `prev_hash ${line.prev_hash} is not the previous line's hash ${prevHash}` };
  const { hash, ...unhashed } = line;
  const sealed = sealLine(unhashed);
  if (sealed.line.hash !== hash) return { fault: 'hash does not match the line’s content' };
  // Every byte counts: the text must be exactly what the export writes for these values.
  if (sealed.text !== text) return { fault: 'the text is not as an export writes it (spacing, escapes, key order or number form changed)' };
  return { line, fault: null };
}

const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why a line's fields are not of their types, or null. */
function typeOfFields(line: ExportLine): string | null {
  for (const field of ['stream_id', 'event_id', 'type', 'recorded_at'] as const) if (typeof line[field] !== 'string') return `${field} is not a string`;
  for (const field of ['revision', 'version'] as const) if (!Number.isSafeInteger(line[field])) return `${field} is not an integer`;
  for (const field of ['data', 'metadata'] as const) if (!isObject(line[field])) return `${field} is not an object`;
  for (const field of ['prev_hash', 'hash'] as const)
    if (typeof line[field] !== 'string' || !/^[0-9a-f]{64}$/.test(line[field])) return `${field} is not a hex SHA-256`;
  return null;
}

/**
 * Checks an export: first the chain (every line's layout, prev_hash and hash) and the manifest
 * beside it (count and final hash; a file without one fails unless allowMissingManifest), then,
 * given a store, every line against the event store (the event at that stream and revision has
 * this id, type, version, data as exported, metadata and time). With a manifest, that last pass
 * walks the store as the export did (the manifest's filter, up to its read_up_to), so a line
 * dropped, added or moved, even with the chain and the manifest made again to match, is named too.
 * Answers the first line that fails and why.
 */
export async function verifyExport(file: string, store?: EventStore, onProgress?: ProgressListener, options: VerifyOptions = {}): Promise<VerifyResult> {
  if (!existsSync(file)) return { ok: false, line: null, reason: `${file} does not exist` };
  let prevHash = GENESIS_HASH;
  let lines = 0;
  for await (const { number, text } of linesOf(file)) {
    const { fault, line } = chainFault(text, prevHash);
    if (fault) return { ok: false, line: number, reason: fault };
    prevHash = line!.hash;
    lines = number;
  }

  let manifest: ExportManifest | undefined;
  const manifestFile = manifestFileOf(file);
  if (existsSync(manifestFile)) {
    try {
      manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as ExportManifest;
    } catch {
      return { ok: false, line: null, reason: `${manifestFile} is not JSON` };
    }
    const malformed = manifestFault(manifest);
    if (malformed) return { ok: false, line: null, reason: `${manifestFile} is not a manifest an export writes: ${malformed}` };
    if (manifest.count !== lines)
      return { ok: false, line: Math.min(manifest.count, lines) + 1, reason: `the manifest counts ${manifest.count} lines, the file has ${lines}` };
    if (manifest.final_hash !== prevHash)
      return { ok: false, line: lines, reason: `the last hash ${prevHash} is not the manifest's final_hash ${manifest.final_hash}` };
  } else if (!options.allowMissingManifest) {
    return {
      ok: false,
      line: null,
      reason: `${manifestFile} is missing: without it a file cut short cannot be told from a whole one (--no-manifest checks the rest anyway)`,
    };
  }
  const manifestState = manifest ? 'matches' : 'absent';

  if (!store) return { ok: true, lines, final_hash: prevHash, manifest: manifestState, checked_against_store: false, complete_against_store: false };
  const fault = manifest ? await walkedAgainstStore(file, manifest, store, lines, onProgress) : await linesAgainstStore(file, store, lines, onProgress);
  if (fault) return { ok: false, ...fault };
  onProgress?.(lines, 1);
  const selection = manifest ? { selection: { filter: manifest.filter ?? {}, read_up_to: manifest.read_up_to } } : {};
  return {
    ok: true,
    lines,
    final_hash: prevHash,
    manifest: manifestState,
    checked_against_store: true,
    complete_against_store: manifest !== undefined,
    ...selection,
  };
}

/** Each line against the stored event at its stream and revision (windows of each stream, read once). */
async function linesAgainstStore(
  file: string,
  store: EventStore,
  lines: number,
  onProgress?: ProgressListener,
): Promise<{ line: number; reason: string } | null> {
  const windows = new Map<string, { from: number; events: RecordedEvent[] }>();
  for await (const { number, text } of linesOf(file)) {
    const line = JSON.parse(text) as ExportLine;
    let window = windows.get(line.stream_id);
    if (!window || line.revision < window.from || line.revision >= window.from + window.events.length) {
      if (windows.size >= STREAM_CACHE_SIZE) windows.clear();
      window = { from: line.revision, events: await store.readStream(line.stream_id, { fromRevision: line.revision, maxCount: WINDOW }) };
      windows.set(line.stream_id, window);
    }
    const fault = storeFault(line, window.events[line.revision - window.from]);
    if (fault) return { line: number, reason: fault };
    if (number % 2_000 === 0) onProgress?.(number, number / lines);
  }
  return null;
}

/** The store's events the manifest's filter selects, up to its read_up_to, side by side with the file's lines: the same events, in the same order. */
async function walkedAgainstStore(
  file: string,
  manifest: ExportManifest,
  store: EventStore,
  lines: number,
  onProgress?: ProgressListener,
): Promise<{ line: number | null; reason: string } | null> {
  const keep = selector(manifest.filter ?? {});
  const fileLines = linesOf(file)[Symbol.asyncIterator]();
  try {
    let number = 0;
    let lastPosition: string | null = null;
    for await (const page of pages(store, manifest.filter ?? {}, manifest.read_up_to)) {
      for (const stored of page) {
        if (!keep(stored, stored.metadata)) continue;
        const next = await fileLines.next();
        number++;
        if (next.done)
          return {
            line: number,
            reason: `the event store also selects ${stored.streamId}@${stored.revision} (event ${stored.id}) here, which the file does not hold`,
          };
        const line = JSON.parse(next.value.text) as ExportLine;
        if (line.stream_id !== stored.streamId || line.revision !== stored.revision) {
          return {
            line: number,
            reason: `the event store has ${stored.streamId}@${stored.revision} here, the file ${line.stream_id}@${line.revision}: a line was dropped, added or moved`,
          };
        }
        const fault = storeFault(line, stored);
        if (fault) return { line: number, reason: fault };
        lastPosition = stored.position;
        if (number % 2_000 === 0) onProgress?.(number, number / lines);
      }
    }
    const extra = await fileLines.next();
    if (!extra.done) return { line: number + 1, reason: "the event store selects nothing more up to the manifest's read_up_to, but the file goes on" };
    if ((manifest.last_position ?? null) !== lastPosition)
      return {
        line: number || null,
        reason: `the manifest's last_position ${manifest.last_position} is not the position of the last line's event (${lastPosition})`,
      };
    return null;
  } finally {
    // Stopped early (a difference found): the file is closed now, not when the stream is collected.
    await fileLines.return?.(undefined);
  }
}

/** Why a parsed manifest is not one exportEvents writes (the fields verify relies on), or null. */
function manifestFault(manifest: unknown): string | null {
  if (!isObject(manifest)) return 'not a JSON object';
  const m = manifest as Record<string, unknown>;
  if (!Number.isSafeInteger(m['count']) || (m['count'] as number) < 0) return 'count is not a whole number';
  if (typeof m['final_hash'] !== 'string' || !/^[0-9a-f]{64}$/.test(m['final_hash'])) return 'final_hash is not a hex SHA-256';
  for (const field of ['read_up_to', 'last_position']) {
    if (m[field] !== null && !(typeof m[field] === 'string' && /^\d+$/.test(m[field] as string))) return `${field} is not a position (digits) or null`;
  }
  if (m['filter'] !== undefined && !isObject(m['filter'])) return 'filter is not an object';
  return null;
}

/** How a line differs from the stored event at its stream and revision, or null. */
function storeFault(line: ExportLine, stored: RecordedEvent | undefined): string | null {
  if (!stored || stored.revision !== line.revision) return `the event store has no event at revision ${line.revision} of ${line.stream_id}`;
  if (stored.id.toLowerCase() !== line.event_id.toLowerCase())
    return `event_id ${line.event_id}, the store has ${stored.id} at ${line.stream_id}@${line.revision}`;
  if (stored.type !== line.type) return `type ${line.type}, the store has ${stored.type}`;
  if (Number(stored.metadata['version'] ?? 1) !== line.version) return `version ${line.version}, the store has ${String(stored.metadata['version'] ?? 1)}`;
  if (canonicalize(redactedData(stored)) !== canonicalize(line.data)) return 'data differs from the stored event';
  if (canonicalize(stored.metadata) !== canonicalize(line.metadata)) return 'metadata differs from the stored event';
  if (stored.occurredAt !== line.recorded_at) return `recorded_at ${line.recorded_at}, the store has ${stored.occurredAt}`;
  return null;
}
