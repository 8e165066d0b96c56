import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import canonicalize from 'canonicalize';
import { EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { ExportManifest, manifestFileOf, ProgressListener } from './event-export';
import { ExportLine, GENESIS_HASH, LINE_FIELDS, sealLine } from './export-line';
import { redactedData } from './redaction';

export type VerifyResult =
  | { ok: true; lines: number; final_hash: string; manifest: 'matches' | 'absent'; checked_against_store: boolean }
  | { ok: false; line: number | null; reason: string };

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
  for (const field of ['prev_hash', 'hash'] as const) if (typeof line[field] !== 'string' || !/^[0-9a-f]{64}$/.test(line[field])) return `${field} is not a hex SHA-256`;
  return null;
}

/**
 * Checks an export: first the chain (every line's layout, prev_hash and hash) and the manifest
 * beside it (count and final hash), then, given a store, every line against the event store (the
 * event at that stream and revision has this id, type, version, data as exported, metadata and
 * time). Answers the first line that fails and why.
 */
export async function verifyExport(file: string, store?: EventStore, onProgress?: ProgressListener): Promise<VerifyResult> {
  if (!existsSync(file)) return { ok: false, line: null, reason: `${file} does not exist` };
  let prevHash = GENESIS_HASH;
  let lines = 0;
  for await (const { number, text } of linesOf(file)) {
    const { fault, line } = chainFault(text, prevHash);
    if (fault) return { ok: false, line: number, reason: fault };
    prevHash = line!.hash;
    lines = number;
  }

  let manifestState: 'matches' | 'absent' = 'absent';
  const manifestFile = manifestFileOf(file);
  if (existsSync(manifestFile)) {
    let manifest: ExportManifest;
    try {
      manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as ExportManifest;
    } catch {
      return { ok: false, line: null, reason: `${manifestFile} is not JSON` };
    }
    if (manifest.count !== lines) return { ok: false, line: Math.min(manifest.count, lines) + 1, reason: `the manifest counts ${manifest.count} lines, the file has ${lines}` };
    if (manifest.final_hash !== prevHash) return { ok: false, line: lines, reason: `the last hash ${prevHash} is not the manifest's final_hash ${manifest.final_hash}` };
    manifestState = 'matches';
  }

  if (!store) return { ok: true, lines, final_hash: prevHash, manifest: manifestState, checked_against_store: false };
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
    if (fault) return { ok: false, line: number, reason: fault };
    if (number % 2_000 === 0) onProgress?.(number, number / lines);
  }
  onProgress?.(lines, 1);
  return { ok: true, lines, final_hash: prevHash, manifest: manifestState, checked_against_store: true };
}

/** How a line differs from the stored event at its stream and revision, or null. */
function storeFault(line: ExportLine, stored: RecordedEvent | undefined): string | null {
  if (!stored || stored.revision !== line.revision) return `the event store has no event at revision ${line.revision} of ${line.stream_id}`;
  if (stored.id.toLowerCase() !== line.event_id.toLowerCase()) return `event_id ${line.event_id}, the store has ${stored.id} at ${line.stream_id}@${line.revision}`;
  if (stored.type !== line.type) return `type ${line.type}, the store has ${stored.type}`;
  if (Number(stored.metadata['version'] ?? 1) !== line.version) return `version ${line.version}, the store has ${String(stored.metadata['version'] ?? 1)}`;
  if (canonicalize(redactedData(stored)) !== canonicalize(line.data)) return 'data differs from the stored event';
  if (canonicalize(stored.metadata) !== canonicalize(line.metadata)) return 'metadata differs from the stored event';
  if (stored.occurredAt !== line.recorded_at) return `recorded_at ${line.recorded_at}, the store has ${stored.occurredAt}`;
  return null;
}
