import type { Worker } from 'node:worker_threads';
import { PerTurn, startWorkerBeside } from '@campaign-ops/worker-start';
import type { ConnectionLimits } from './partner-connections';
import type { WebhookRequest, WebhookResult } from './post-webhook';

/** What sends webhooks: WebhookSender in the caller's thread, or WebhookSenderThread beside it. */
export interface WebhookPoster {
  post(request: WebhookRequest): Promise<WebhookResult>;
  close(): Promise<void>;
}

/** To the thread: the posts of one turn of the caller's event loop, or the end. */
export type SenderThreadMessage = { kind: 'posts'; posts: Array<{ id: number; request: WebhookRequest }> } | { kind: 'close' };
/** From the thread: the answers of one turn of its event loop. */
export type SenderThreadReply = Array<{ id: number; result: WebhookResult } | { id: number; error: string }>;

/**
 * The thread's young generation, which V8 otherwise lets grow to tens of MB under load: what the
 * thread allocates lives for one request, so a small one costs a few more quick scavenges and kept
 * about 25 MB out of the process's resident memory (measured at 500 launches/s).
 */
export const SENDER_THREAD_LIMITS = { maxYoungGenerationSizeMb: 4 } as const;

/**
 * A WebhookSender in a worker thread of its own: TLS, the partners' sockets and undici run on
 * another core than the caller's event loop, which keeps only the hand-over (a structured clone of
 * the requests and of the results, those of one turn of either side's event loop in one message).
 * Same contract as WebhookSender.post; a thread that dies fails
 * the requests it held (the caller's lease brings them back) and the next post starts a new one.
 */
export class WebhookSenderThread implements WebhookPoster {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(result: WebhookResult): void; reject(error: Error): void }>();
  private closed = false;
  /** The posts of this turn, handed over together at its end (one message, one wake-up of the thread). */
  private readonly outbox = new PerTurn<{ id: number; request: WebhookRequest }>((posts) =>
    this.thread().postMessage({ kind: 'posts', posts } satisfies SenderThreadMessage),
  );

  constructor(private readonly limits: Partial<ConnectionLimits> = {}) {}

  post(request: WebhookRequest): Promise<WebhookResult> {
    if (this.closed) return Promise.reject(new Error('the webhook sender is closed'));
    const id = this.nextId++;
    return new Promise<WebhookResult>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.outbox.add({ id, request });
    });
  }

  /** Ends the thread once the requests under way are answered. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // What was posted before close() goes first.
    this.outbox.flush();
    worker.postMessage({ kind: 'close' } satisfies SenderThreadMessage);
    await exited;
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorkerBeside(__filename, 'sender.worker', this.limits, undefined, SENDER_THREAD_LIMITS);
    worker.on('message', (replies: SenderThreadReply) => {
      for (const reply of replies) {
        const waiter = this.waiting.get(reply.id);
        if (!waiter) continue;
        this.waiting.delete(reply.id);
        if ('result' in reply) waiter.resolve(reply.result);
        else waiter.reject(new Error(reply.error));
      }
    });
    const failAll = (error: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new Error(`the webhook sender thread exited (code ${code})`)));
    // Idle, the thread does not keep the process alive; requests in flight keep their sockets' refs.
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
