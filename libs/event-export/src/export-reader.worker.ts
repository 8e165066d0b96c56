/**
 * An export's reader thread (see pagesFromReaders): opens the embedded event store's file on a
 * connection of its own and answers each asked range of positions with its prepared page.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { nameThread } from '@campaign-ops/worker-start';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { ExportFilter, prefixesOf, selector } from './export-filter';
import { PAGE_SPAN, preparePage } from './prepared-pages';

nameThread('export-reader');

const { file, filter } = workerData as { file: string; filter: ExportFilter };
const store = SqliteEventStore.open(file);
const keep = selector(filter);
const streamPrefixes = prefixesOf(filter);

parentPort!.on('message', async ({ id, from, to }: { id: number; from: string; to: string }) => {
  try {
    const events = await store.readAllCanonical({ fromPosition: from, toPosition: to, maxCount: PAGE_SPAN, streamPrefixes });
    const page = preparePage(events, keep, to);
    // Handed over, not copied.
    parentPort!.postMessage({ id, page }, [page.bytes.buffer as ArrayBuffer, page.ends.buffer as ArrayBuffer]);
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
});
