import type { Worker } from 'node:worker_threads';
import { startWorkerBeside } from '@campaign-ops/worker-start';
import { assertDocument, assertRevision } from './document-checks';
import type { Doc, ReadModelRebuild, StandInTables } from './read-store.port';

/** Batches written or being written at once; upsertMany waits past it, so memory stays bounded. */
const MAX_IN_FLIGHT = 4;

/**
 * Writes a rebuild's stand-ins in a thread of its own, so that the replay (reading, folding) and
 * the writing (serializing, inserts, index upkeep) use two cores: a write is handed over and
 * the replay goes on. `drain` waits until everything handed over is committed.
 */
export class RebuildWriter {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(): void; reject(error: Error): void }>();
  private readonly inFlight = new Set<Promise<void>>();
  private sent = 0;
  private failure: Error | null = null;
  private closing = false;

  constructor(file: string, busyTimeoutMs: number) {
    this.worker = startWorkerBeside(__filename, 'rebuild-writer.worker', { file, busyTimeoutMs });
    this.worker.on('message', ({ id, error }: { id: number; error?: string }) => {
      if (error !== undefined) return this.fail(new Error(`the rebuild's writer thread failed: ${error}`));
      this.waiting.get(id)?.resolve();
      this.waiting.delete(id);
    });
    this.worker.on('error', (error) => this.fail(error));
    this.worker.on('exit', (code) => {
      if (!this.closing) this.fail(new Error(`the rebuild's writer thread ended (exit code ${code})`));
    });
  }

  /**
   * Hands a batch over (`table` quoted, rows as [id, revision, document]); waits only while too many
   * are under way. The documents are serialized there, from their structured clone (cheaper here
   * than JSON.stringify): the same text for what a document is, plain JSON data.
   */
  async write(table: string, rows: Array<[string, number, Doc]>): Promise<void> {
    while (this.inFlight.size >= MAX_IN_FLIGHT && !this.failure) await Promise.race(this.inFlight).catch(() => undefined);
    if (this.failure) throw this.failure;
    const id = this.sent++;
    const committed: Promise<void> = new Promise<void>((resolve, reject) => this.waiting.set(id, { resolve, reject })).finally(() => this.inFlight.delete(committed));
    // Awaited by drain or met by a later write (the failure is kept); never unhandled meanwhile.
    committed.catch(() => undefined);
    this.inFlight.add(committed);
    this.worker.postMessage({ id, table, rows });
  }

  /** Waits until every batch handed over is committed; throws the first failure. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    if (this.failure) throw this.failure;
  }

  /** Drains, then ends the thread (and its connection). */
  async close(): Promise<void> {
    try {
      await this.drain();
    } finally {
      this.closing = true;
      await this.worker.terminate();
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiting of this.waiting.values()) waiting.reject(this.failure);
    this.waiting.clear();
  }
}

/**
 * Writes into a rebuild's stand-ins through a writer thread, by collection name: the embedded
 * store's own rebuild writes through one, and so does a replay running in another thread (given
 * the rebuild's standInTables), each on a connection of its own.
 */
export class StandInWriter implements Pick<ReadModelRebuild, 'upsertMany' | 'drain'> {
  private readonly writer: RebuildWriter;

  constructor(
    private readonly standIns: StandInTables,
    busyTimeoutMs: number,
  ) {
    this.writer = new RebuildWriter(standIns.file, busyTimeoutMs);
  }

  async upsertMany<T extends Doc>(name: string, entries: ReadonlyArray<{ doc: T; revision: number }>): Promise<void> {
    const table = Object.prototype.hasOwnProperty.call(this.standIns.tables, name) ? this.standIns.tables[name] : undefined;
    if (table === undefined) throw new Error(`${name} is not part of this rebuild`);
    await this.writer.write(table, entries.map(({ doc, revision }) => [assertDocument(doc).id, assertRevision(revision), doc]));
  }

  drain(): Promise<void> {
    return this.writer.drain();
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
