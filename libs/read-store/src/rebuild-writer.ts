import { MessageChannel, MessagePort, Worker } from 'node:worker_threads';
import { startWorkerBeside } from '@campaign-ops/worker-start';
import { assertDocument, assertRevision } from './document-checks';
import type { Doc, ReadModelRebuild, StandInPort } from './read-store.port';

/** Batches written or being written at once, per sender; upsertMany waits past it, so memory stays bounded. */
const MAX_IN_FLIGHT = 4;

/**
 * Batches handed to a rebuild's writer thread over one channel (the thread itself, or a port to
 * it), each answered once committed: so that the replay (reading, folding) and the writing
 * (inserts, index upkeep) use two cores, a write is handed over and the replay goes on.
 */
class WriterChannel {
  private readonly waiting = new Map<number, { resolve(): void; reject(error: Error): void }>();
  private readonly inFlight = new Set<Promise<void>>();
  private sent = 0;
  private failure: Error | null = null;
  closing = false;

  constructor(private readonly channel: Worker | MessagePort) {
    channel.on('message', ({ id, error }: { id: number; error?: string }) => {
      if (error !== undefined) return this.fail(new Error(`the rebuild's writer thread failed: ${error}`));
      this.waiting.get(id)?.resolve();
      this.waiting.delete(id);
    });
  }

  /**
   * Hands a batch over (`table` quoted, rows as [id, revision, document's JSON text]); waits only
   * while too many are under way. Texts, not objects: a string crosses to the thread as a copy of
   * its bytes, where an object would be cloned here and rebuilt there before being serialized.
   */
  async write(table: string, rows: Array<[string, number, string]>): Promise<void> {
    while (this.inFlight.size >= MAX_IN_FLIGHT && !this.failure) await Promise.race(this.inFlight).catch(() => undefined);
    if (this.failure) throw this.failure;
    const id = this.sent++;
    const committed: Promise<void> = new Promise<void>((resolve, reject) => this.waiting.set(id, { resolve, reject })).finally(() =>
      this.inFlight.delete(committed),
    );
    // Awaited by drain or met by a later write (the failure is kept); never unhandled meanwhile.
    committed.catch(() => undefined);
    this.inFlight.add(committed);
    this.channel.postMessage({ id, table, rows });
  }

  /** Waits until every batch handed over is committed; throws the first failure. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    if (this.failure) throw this.failure;
  }

  fail(error: Error): void {
    this.failure ??= error;
    for (const waiting of this.waiting.values()) waiting.reject(this.failure);
    this.waiting.clear();
  }
}

/**
 * Writes into a rebuild's stand-ins, by collection name, through the rebuild's one writer thread
 * (one connection, so writers never wait on each other's locks): the embedded store's rebuild
 * starts that thread, and a replay running in another thread writes through a port to it
 * (`port()` makes one, `StandInWriter.over` writes through it).
 */
export class StandInWriter implements Pick<ReadModelRebuild, 'upsertMany' | 'drain'> {
  private constructor(
    private readonly tables: Record<string, string>,
    private readonly channel: WriterChannel,
    private readonly end: () => Promise<void>,
    private readonly worker?: Worker,
  ) {}

  /** Starts the writer thread, on a connection of its own to `file`. */
  static start(file: string, tables: Record<string, string>, busyTimeoutMs: number): StandInWriter {
    const worker = startWorkerBeside(__filename, 'rebuild-writer.worker', { file, busyTimeoutMs });
    const channel = new WriterChannel(worker);
    worker.on('error', (error) => channel.fail(error));
    worker.on('exit', (code) => {
      if (!channel.closing) channel.fail(new Error(`the rebuild's writer thread ended (exit code ${code})`));
    });
    return new StandInWriter(tables, channel, async () => void (await worker.terminate()), worker);
  }

  /** Writes through a port to a writer thread (made by its owner's `port()`, passed to this thread). */
  static over({ tables, port }: StandInPort): StandInWriter {
    const channel = new WriterChannel(port);
    port.on('close', () => {
      if (!channel.closing) channel.fail(new Error("the port to the rebuild's writer thread was closed"));
    });
    return new StandInWriter(tables, channel, async () => port.close());
  }

  /** A port of its own to this writer's thread, for a replay in another thread (its owner only). */
  port(): StandInPort {
    if (!this.worker) throw new Error("only the writer thread's owner makes ports to it");
    const { port1, port2 } = new MessageChannel();
    this.worker.postMessage({ port: port2 }, [port2]);
    return { tables: this.tables, port: port1 };
  }

  async upsertMany<T extends Doc>(name: string, entries: ReadonlyArray<{ doc: T; revision: number }>): Promise<void> {
    const table = Object.prototype.hasOwnProperty.call(this.tables, name) ? this.tables[name] : undefined;
    if (table === undefined) throw new Error(`${name} is not part of this rebuild`);
    await this.channel.write(
      table,
      entries.map(({ doc, revision }) => [assertDocument(doc).id, assertRevision(revision), JSON.stringify(doc)]),
    );
  }

  /** Waits until every batch this writer handed over is committed (not those of other ports). */
  drain(): Promise<void> {
    return this.channel.drain();
  }

  /** Drains, then closes the port, or ends the thread (and its connection): its owner, once every port's writer is closed. */
  async close(): Promise<void> {
    try {
      await this.drain();
    } finally {
      this.channel.closing = true;
      await this.end();
    }
  }
}
