import { hash as digest } from 'node:crypto';
import canonicalize from 'canonicalize';
import { RecordedEvent } from '@campaign-ops/event-store';
import { redactedData } from './redaction';

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

export const LINE_FIELDS: ReadonlyArray<keyof ExportLine> = ['stream_id', 'revision', 'event_id', 'type', 'version', 'data', 'metadata', 'recorded_at', 'prev_hash', 'hash'];

/** One-shot SHA-256 (no Hash object per line: an export hashes every line). */
const sha256 = (text: string) => digest('sha256', text, 'hex');
const q = JSON.stringify;

/**
 * The line's text and hash, in one pass: data and metadata are canonicalized once (the
 * `canonicalize` package) and both the canonical form (keys sorted, what is hashed) and the line's
 * text (fields in LINE_FIELDS order, data and metadata in their canonical form) are assembled from
 * them. For well-typed fields (strings, integer revision and version, objects) the canonical form is
 * exactly canonicalize(line without hash): the specs check it against the package and node:crypto.
 */
export function sealLine(unhashed: Omit<ExportLine, 'hash'>): { line: ExportLine; text: string } {
  const data = canonicalize(unhashed.data)!;
  const metadata = canonicalize(unhashed.metadata)!;
  const [stream, revision, event, type, version, recorded, prev] = [unhashed.stream_id, unhashed.revision, unhashed.event_id, unhashed.type, unhashed.version, unhashed.recorded_at, unhashed.prev_hash].map((v) => q(v));
  const canonical = `{"data":${data},"event_id":${event},"metadata":${metadata},"prev_hash":${prev},"recorded_at":${recorded},"revision":${revision},"stream_id":${stream},"type":${type},"version":${version}}`;
  const hash = sha256(`${unhashed.prev_hash}\n${canonical}`);
  const text = `{"stream_id":${stream},"revision":${revision},"event_id":${event},"type":${type},"version":${version},"data":${data},"metadata":${metadata},"recorded_at":${recorded},"prev_hash":${prev},"hash":"${hash}"}`;
  return { line: { ...unhashed, hash }, text };
}

/** The event as an export line (its secrets redacted), chained to `prevHash`. */
export function toExportLine(event: RecordedEvent, prevHash: string): { line: ExportLine; text: string } {
  return sealLine({
    stream_id: event.streamId,
    revision: event.revision,
    event_id: event.id,
    type: event.type,
    version: Number(event.metadata['version'] ?? 1),
    data: redactedData(event),
    metadata: event.metadata,
    recorded_at: event.occurredAt,
    prev_hash: prevHash,
  });
}
