import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import canonicalize from 'canonicalize';
import { CanonicalEvent, EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { startWorkerBeside } from '@campaign-ops/worker-start';
import { canonicalLineOf, EncodedPieces, encodePieces, LinePieces, linePieces } from './export-line';
import { ExportFilter, prefixesOf, selector } from './export-filter';

/**
 * A page of an export made ready for chaining: the pieces of each selected event's line (see
 * LinePieces). Making them is most of an export's work and needs no hash; only the chaining, which
 * does, is left to the thread that writes the file.
 */
export interface PreparedPage extends EncodedPieces {
  /** The position of the last selected event (null: none). */
  lastPosition: string | null;
  /** How far through the store's positions the page reaches. */
  readTo: string;
}

/** Positions per page: ranges of positions, so that reader threads know theirs without asking one another. */
export const PAGE_SPAN = 2_000;
/** Pages asked for ahead of the one being written, per reader thread. */
const AHEAD_PER_READER = 2;

export function preparePage(events: readonly CanonicalEvent[], keep: ReturnType<typeof selector>, readTo: string): PreparedPage {
  const lines: LinePieces[] = [];
  let lastPosition: string | null = null;
  for (const event of events) {
    const metadata = JSON.parse(event.metadata) as Record<string, unknown>;
    if (!keep(event, metadata)) continue;
    lines.push(linePieces(canonicalLineOf(event, metadata)));
    lastPosition = event.position;
  }
  return { ...encodePieces(lines), lastPosition, readTo };
}

export interface PreparedPagesOptions {
  /** Reader threads for an embedded store (default: one per CPU, up to 4); below 2, pages are made in this thread. */
  readers?: number;
}

/**
 * The export's pages, prepared, in commit order, up to `upTo`. On the embedded store (a file), the
 * pages are read and prepared by reader threads, each with its own connection, page k by reader
 * k mod n, a few pages ahead; elsewhere (EventStoreDB, one stream) in this thread.
 */
export async function* preparedPages(
  store: EventStore,
  filter: ExportFilter,
  upTo: string | null,
  options: PreparedPagesOptions = {},
): AsyncGenerator<PreparedPage> {
  if (upTo === null) return;
  const readers = options.readers ?? Math.min(4, availableParallelism());
  if (store instanceof SqliteEventStore && store.file !== ':memory:' && filter.stream === undefined && readers >= 2) {
    yield* pagesFromReaders(store.file, filter, upTo, readers);
    return;
  }
  const keep = selector(filter);
  for await (const page of canonicalPages(store, filter, upTo)) yield preparePage(page, keep, page.length ? page[page.length - 1].position : upTo);
}

/**
 * pages, with data and metadata as canonical text: straight from the store where it keeps that form
 * (readAllCanonical), else canonicalized here. One stream is read as pages does (streams are short).
 */
async function* canonicalPages(store: EventStore, filter: ExportFilter, upTo: string): AsyncGenerator<CanonicalEvent[]> {
  if (filter.stream !== undefined || !store.readAllCanonical) {
    for await (const page of pages(store, filter, upTo)) yield page.map(canonicalEventOf);
    return;
  }
  const readPage = store.readAllCanonical.bind(store);
  yield* pagesAfter((fromPosition) => readPage({ fromPosition, toPosition: upTo, maxCount: PAGE_SPAN, streamPrefixes: prefixesOf(filter) }));
}

const canonicalEventOf = (event: RecordedEvent): CanonicalEvent => ({ ...event, data: canonicalize(event.data)!, metadata: canonicalize(event.metadata)! });

/** The store's events in commit order, page by page, up to `upTo`: one stream's, a category's or everyone's. */
export async function* pages(store: EventStore, filter: ExportFilter, upTo: string | null): AsyncGenerator<RecordedEvent[]> {
  if (upTo === null) return;
  const limit = BigInt(upTo);
  const within = (page: RecordedEvent[]) => page.filter((event) => BigInt(event.position) <= limit);
  if (filter.stream !== undefined) {
    for (let fromRevision = 0; ; fromRevision += PAGE_SPAN) {
      const page = await store.readStream(filter.stream, { fromRevision, maxCount: PAGE_SPAN });
      const kept = within(page);
      yield kept;
      if (page.length < PAGE_SPAN || kept.length < page.length) return;
    }
  }
  yield* pagesAfter(async (fromPosition) => within(await store.readAll({ fromPosition, maxCount: PAGE_SPAN, streamPrefixes: prefixesOf(filter) })));
}

/** Pages read after one another until a short one (the reads stop at the export's end themselves). */
async function* pagesAfter<E extends { position: string }>(readPage: (fromPosition: string | undefined) => Promise<E[]>): AsyncGenerator<E[]> {
  let fromPosition: string | undefined;
  for (;;) {
    const page = await readPage(fromPosition);
    yield page;
    if (page.length < PAGE_SPAN) return;
    fromPosition = page[page.length - 1].position;
  }
}

async function* pagesFromReaders(file: string, filter: ExportFilter, upTo: string, count: number): AsyncGenerator<PreparedPage> {
  const end = Number(upTo);
  const ranges = Math.ceil(end / PAGE_SPAN);
  const readers = Array.from({ length: Math.min(count, ranges) }, () => new PageReader(file, filter));
  const asked = new Map<number, Promise<PreparedPage>>();
  let next = 0;
  try {
    for (let k = 0; k < ranges; k++) {
      for (; next < ranges && next < k + readers.length * AHEAD_PER_READER; next++) {
        const page = readers[next % readers.length].read(String(next * PAGE_SPAN), String(Math.min(end, (next + 1) * PAGE_SPAN)));
        // Awaited in turn below; one that fails before its turn must not count as unhandled meanwhile.
        page.catch(() => undefined);
        asked.set(next, page);
      }
      const page = await asked.get(k)!;
      asked.delete(k);
      yield page;
    }
  } finally {
    await Promise.all(readers.map((reader) => reader.close()));
  }
}

/** A reader thread: reads and prepares the pages it is asked for, in the order asked. */
class PageReader {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(page: PreparedPage): void; reject(error: Error): void }>();
  private asked = 0;
  private failure: Error | null = null;

  constructor(file: string, filter: ExportFilter) {
    this.worker = startWorkerBeside(__filename, 'export-reader.worker', { file, filter });
    this.worker.on('message', (message: { id: number; page?: PreparedPage; error?: string }) => {
      const waiting = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.page) waiting?.resolve(message.page);
      else waiting?.reject(new Error(`an export reader thread failed: ${message.error}`));
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      for (const waiting of this.waiting.values()) waiting.reject(error);
      this.waiting.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`an export reader thread ended (exit code ${code})`)));
  }

  read(from: string, to: string): Promise<PreparedPage> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.asked++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id, from, to });
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
