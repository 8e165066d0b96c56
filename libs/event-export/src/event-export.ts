import { closeSync, fdatasync, openSync, renameSync, unlinkSync, write, writeSync } from 'node:fs';
import { EventStore } from '@campaign-ops/event-store';
import { syncDirectoryOf, writeDurably } from './durable-file';
import { ExportFilter, normalizeFilter } from './export-filter';
import { chainPieces, GENESIS_HASH, LineSink } from './export-line';
import { preparedPages, PreparedPagesOptions } from './prepared-pages';
import { REDACTED_FIELDS } from './redaction';

export { ExportFilter, selector } from './export-filter';
export { pages } from './prepared-pages';

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

const BUFFER_BYTES = 4 << 20;

export interface ExportOptions extends PreparedPagesOptions {
  /** A selection without events throws EmptyExportError and writes nothing (an export of nothing would look like an audit of nothing). */
  refuseEmpty?: boolean;
}

/** The filter selected no event of the store (up to `readUpTo`): nothing was written. */
export class EmptyExportError extends Error {
  constructor(
    readonly filter: ExportFilter,
    readonly readUpTo: string | null,
  ) {
    super(`no event matches ${filterText(filter)} in the event store (up to position ${readUpTo ?? '-, it is empty'}): nothing written`);
    this.name = 'EmptyExportError';
  }
}

/** A filter as the command line gives it: `--category dispatch --from 2026-01-01T00:00:00.000Z`, or `no filter`. */
export const filterText = (filter: ExportFilter): string =>
  Object.entries(filter)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `--${name} ${value}`)
    .join(' ') || 'no filter';

export const manifestFileOf = (file: string) => `${file}.manifest.json`;

/**
 * Writes the events the filter selects, in commit order, to `file` as a hash chain of JSON lines,
 * and the manifest beside it. Only what the store held when the export began is read (up to its
 * last position then), so an export of a running system is a snapshot. The file and the manifest
 * are written under temporary names and renamed once their bytes are on disk (then the directory
 * is synced, for the renames): a file with its final name is complete, even after a power cut.
 */
export async function exportEvents(
  store: EventStore,
  filter: ExportFilter,
  file: string,
  onProgress?: ProgressListener,
  options: ExportOptions = {},
): Promise<ExportManifest> {
  const normalized = normalizeFilter(filter);
  const upTo = await store.lastPosition();
  const partial = `${file}.partial`;
  const fd = openSync(partial, 'w');
  let prevHash = GENESIS_HASH;
  let count = 0;
  let lastPosition: string | null = null;
  const out = new FileBuffer(fd);
  try {
    for await (const page of preparedPages(store, normalized, upTo, options)) {
      // The chaining is all this thread does per line (see PreparedPage).
      prevHash = chainPieces(page, prevHash, out);
      await out.handOff();
      count += page.ends.length / 3;
      lastPosition = page.lastPosition ?? lastPosition;
      onProgress?.(count, fractionOf(page.readTo, upTo));
    }
    await out.close();
    await new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
  } finally {
    await out.settled();
    closeSync(fd);
  }
  if (count === 0 && options.refuseEmpty) {
    unlinkSync(partial);
    throw new EmptyExportError(normalized, upTo);
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
  writeDurably(manifestFileOf(file), `${JSON.stringify(manifest, null, 2)}\n`);
  syncDirectoryOf(file);
  onProgress?.(count, 1);
  return manifest;
}

/**
 * A file written through reused buffers, bytes copied and texts UTF-8-encoded straight into them
 * (several times faster than joining texts into one string and writing that, which copies twice).
 * A full buffer is handed to the file system's thread pool while the other fills: every write
 * names its place in the file, so none waits on another.
 */
class FileBuffer implements LineSink {
  private buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  private spare = Buffer.allocUnsafe(BUFFER_BYTES);
  private used = 0;
  /** Where the buffer's first byte goes in the file. */
  private offset = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly fd: number) {}

  write(text: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (this.used + text.length * 3 > this.buffer.length) this.writeNow(Buffer.from(text));
    else this.used += this.buffer.write(text, this.used);
  }

  writeBytes(from: Buffer, start: number, end: number): void {
    if (this.used + (end - start) > this.buffer.length) this.writeNow(from.subarray(start, end));
    else this.used += from.copy(this.buffer, this.used, start, end);
  }

  /** Once half full, the buffer is handed over for writing (the previous one's write awaited first). */
  async handOff(force = false): Promise<void> {
    if (this.used === 0 || (!force && this.used < this.buffer.length / 2)) return;
    await this.writing;
    const [full, used, offset] = [this.buffer, this.used, this.offset];
    [this.buffer, this.spare] = [this.spare, full];
    this.offset += used;
    this.used = 0;
    this.writing = writeAt(this.fd, full.subarray(0, used), offset);
    // Its failure is met by the next handOff or close; until then it must not count as unhandled.
    this.writing.catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.handOff(true);
    await this.writing;
  }

  /** Once no write is under way (whatever became of it): before the file is closed. */
  async settled(): Promise<void> {
    await this.writing.catch(() => undefined);
  }

  /** What the buffer cannot take: the buffer's bytes, then these, written at once, in place. */
  private writeNow(bytes: Buffer): void {
    for (const chunk of [this.buffer.subarray(0, this.used), bytes]) {
      for (let written = 0; written < chunk.length;) written += writeSync(this.fd, chunk, written, chunk.length - written, this.offset + written);
      this.offset += chunk.length;
    }
    this.used = 0;
  }
}

async function writeAt(fd: number, bytes: Buffer, position: number): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += await new Promise<number>((resolve, reject) =>
      write(fd, bytes, written, bytes.length - written, position + written, (error, count) => (error ? reject(error) : resolve(count))),
    );
  }
}

/** How far `position` is through the store, 0..1 (positions only grow; EventStoreDB's are large). */
export function fractionOf(position: string, upTo: string | null): number {
  if (upTo === null || upTo === '0') return 1;
  return Math.min(1, Number((BigInt(position) * 10_000n) / BigInt(upTo)) / 10_000);
}
