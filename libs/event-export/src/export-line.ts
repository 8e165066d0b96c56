import { hash as digest } from 'node:crypto';
import canonicalize from 'canonicalize';
import { CanonicalEvent } from '@campaign-ops/event-store';
import { redactedCanonicalData } from './redaction';

/** The prev_hash of the first line. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * One line of an export, its fields in this order. `hash` is the hex SHA-256 of the UTF-8 bytes of
 * `prev_hash + "\n" + JCS(line without hash)` (RFC 8785 canonical JSON): each line seals the one
 * before it, so no line can be changed, dropped, moved or added without every later hash changing.
 */
export interface ExportLine {
  stream_id: string;
  revision: number;
  event_id: string;
  type: string;
  /** The event's schema version (metadata.version; 1 when absent). */
  version: number;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  recorded_at: string;
  prev_hash: string;
  hash: string;
}

export const LINE_FIELDS: ReadonlyArray<keyof ExportLine> = [
  'stream_id',
  'revision',
  'event_id',
  'type',
  'version',
  'data',
  'metadata',
  'recorded_at',
  'prev_hash',
  'hash',
];

const q = JSON.stringify;

/** A line's fields but its hashes, with data and metadata as their canonical text (JCS). */
export type CanonicalLine = Omit<ExportLine, 'data' | 'metadata' | 'prev_hash' | 'hash'> & { data: string; metadata: string };

/**
 * A line cut where its prev_hash goes, so that everything but the chaining can be made apart (in
 * reader threads): `canonicalHead + q(prev_hash) + canonicalTail` is its canonical form (keys
 * sorted, what is hashed), `textHead + q(prev_hash) + ,"hash":…}` its text (fields in LINE_FIELDS
 * order). For well-typed fields (strings, integer revision and version) the canonical form is
 * exactly canonicalize(line without hash): the specs check it against the package and node:crypto.
 */
export interface LinePieces {
  canonicalHead: string;
  canonicalTail: string;
  textHead: string;
}

export function linePieces(line: CanonicalLine): LinePieces {
  const { data, metadata } = line;
  const [stream, revision, event, type, version, recorded] = [line.stream_id, line.revision, line.event_id, line.type, line.version, line.recorded_at].map(
    (v) => q(v),
  );
  return {
    canonicalHead: `{"data":${data},"event_id":${event},"metadata":${metadata},"prev_hash":`,
    canonicalTail: `,"recorded_at":${recorded},"revision":${revision},"stream_id":${stream},"type":${type},"version":${version}}`,
    textHead: `{"stream_id":${stream},"revision":${revision},"event_id":${event},"type":${type},"version":${version},"data":${data},"metadata":${metadata},"recorded_at":${recorded},"prev_hash":`,
  };
}

/**
 * Lines' pieces, UTF-8-encoded one after another (canonicalHead, canonicalTail, textHead of each):
 * bytes a reader thread hands over whole, without a copy, and that chaining copies without
 * re-encoding. `ends` holds where each piece ends: three per line.
 */
export interface EncodedPieces {
  bytes: Uint8Array;
  ends: Int32Array;
}

export function encodePieces(lines: readonly LinePieces[]): EncodedPieces {
  let bound = 0;
  for (const line of lines) bound += line.canonicalHead.length + line.canonicalTail.length + line.textHead.length;
  // Its own ArrayBuffer (never a slice of Buffer's pool), so that it can be transferred, and not
  // zero-filled; a UTF-16 code unit takes at most 3 bytes.
  const bytes = Buffer.allocUnsafeSlow(bound * 3);
  const ends = new Int32Array(lines.length * 3);
  let used = 0;
  lines.forEach((line, i) => {
    ends[3 * i] = used += bytes.write(line.canonicalHead, used);
    ends[3 * i + 1] = used += bytes.write(line.canonicalTail, used);
    ends[3 * i + 2] = used += bytes.write(line.textHead, used);
  });
  return { bytes, ends };
}

/** Where chained lines go: their bytes, and text. */
export interface LineSink {
  writeBytes(from: Buffer, start: number, end: number): void;
  write(text: string): void;
}

let scratch = Buffer.allocUnsafe(1 << 16);

/**
 * Chains encoded lines, each to the one before (the first to `prevHash`): writes each line's text,
 * ending in a newline, to `out`, and answers the last hash. Each line's canonical form is put
 * together as bytes in a scratch buffer and hashed there.
 */
export function chainPieces({ bytes, ends }: EncodedPieces, prevHash: string, out: LineSink): string {
  const from = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let start = 0;
  for (let i = 0; i < ends.length; i += 3) {
    const [headEnd, tailEnd, textEnd] = [ends[i], ends[i + 1], ends[i + 2]];
    const prev = q(prevHash);
    const size = 3 * (prevHash.length + prev.length) + 1 + (tailEnd - start);
    if (scratch.length < size) scratch = Buffer.allocUnsafe(2 * size);
    let used = scratch.write(prevHash, 0);
    scratch[used++] = 0x0a;
    used += from.copy(scratch, used, start, headEnd);
    used += scratch.write(prev, used);
    used += from.copy(scratch, used, headEnd, tailEnd);
    prevHash = digest('sha256', scratch.subarray(0, used), 'hex');
    out.writeBytes(from, tailEnd, textEnd);
    out.write(`${prev},"hash":"${prevHash}"}\n`);
    start = textEnd;
  }
  return prevHash;
}

/**
 * The line's hash and text (without its newline), its data and metadata objects canonicalized here
 * (the `canonicalize` package): the way verify seals a line, through the pieces an export chains.
 */
export function sealLine(unhashed: Omit<ExportLine, 'hash'>): { line: ExportLine; text: string } {
  const { prev_hash: prevHash, ...fields } = unhashed;
  const pieces = linePieces({ ...fields, data: canonicalize(unhashed.data)!, metadata: canonicalize(unhashed.metadata)! });
  const parts: string[] = [];
  const hash = chainPieces(encodePieces([pieces]), prevHash, {
    writeBytes: (from, start, end) => parts.push(from.toString('utf8', start, end)),
    write: (text) => parts.push(text),
  });
  return { line: { ...unhashed, hash }, text: parts.join('').slice(0, -1) };
}

/** The event as an export line's fields (its secrets redacted), given its metadata parsed. */
export function canonicalLineOf(event: CanonicalEvent, metadata: Record<string, unknown>): CanonicalLine {
  return {
    stream_id: event.streamId,
    revision: event.revision,
    event_id: event.id,
    type: event.type,
    version: Number(metadata['version'] ?? 1),
    data: redactedCanonicalData(event),
    metadata: event.metadata,
    recorded_at: event.occurredAt,
  };
}
