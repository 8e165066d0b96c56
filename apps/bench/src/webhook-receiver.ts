import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

/** A webhook body is a few hundred bytes; anything near this is not ours. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The partner's side of the benchmark: a plain HTTP server on 127.0.0.1, in the bench process
 * (where the send times are taken, so both ends of the latency come from one clock). It checks
 * `X-SERVICE-Signature` itself, as a partner would, rather than with the service's own code, and
 * keeps the first arrival of a signed `dispatch.completed` per dispatch id.
 */
export class WebhookReceiver {
  /** performance.now() at which the first validly signed dispatch.completed arrived, per dispatch. */
  readonly completedAt = new Map<string, number>();
  /** The event's own `timestamp` (when the service recorded the completion), epoch ms, per dispatch. */
  readonly eventTimestamp = new Map<string, number>();
  badSignatures = 0;
  /** Validly signed dispatch.completed for a dispatch already seen (retries or double sends). */
  duplicates = 0;
  /** Validly signed requests that were not a dispatch.completed with a dispatch id. */
  unexpected = 0;
  /** Bodies that were too large or not JSON. */
  malformed = 0;
  private secret = '';

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static start(): Promise<WebhookReceiver> {
    return new Promise((done, fail) => {
      let receiver: WebhookReceiver;
      const server = createServer((request, response) => receiver.handle(request, response));
      server.once('error', fail);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        receiver = new WebhookReceiver(server, `http://127.0.0.1:${port}/hooks`);
        done(receiver);
      });
    });
  }

  /** The endpoint's signing secret, known once the endpoint is registered. */
  setSecret(secret: string): void {
    this.secret = secret;
  }

  close(): Promise<void> {
    return new Promise((done) => {
      this.server.close(() => done());
      this.server.closeAllConnections();
    });
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    request.on('end', () => {
      const arrivedAt = performance.now();
      if (tooLarge) return this.answer(response, 413, () => this.malformed++);
      const raw = Buffer.concat(chunks);
      if (!this.signatureValid(raw, request.headers['x-service-signature'])) {
        // A real partner refuses these; the service would retry, which a benchmark should show.
        return this.answer(response, 401, () => this.badSignatures++);
      }
      let body: { event?: unknown; timestamp?: unknown; data?: { dispatch_id?: unknown } };
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return this.answer(response, 400, () => this.malformed++);
      }
      const id = body?.data?.dispatch_id;
      if (body?.event !== 'dispatch.completed' || typeof id !== 'string') return this.answer(response, 200, () => this.unexpected++);
      if (this.completedAt.has(id)) return this.answer(response, 200, () => this.duplicates++);
      this.completedAt.set(id, arrivedAt);
      if (typeof body.timestamp === 'string') this.eventTimestamp.set(id, Date.parse(body.timestamp));
      this.answer(response, 200);
    });
    request.on('error', () => response.destroy());
  }

  private answer(response: ServerResponse, status: number, count?: () => void): void {
    count?.();
    response.writeHead(status, { 'Content-Type': 'text/plain' }).end();
  }

  private signatureValid(raw: Buffer, header: string | string[] | undefined): boolean {
    if (!this.secret || typeof header !== 'string') return false;
    const expected = Buffer.from('sha256=' + createHmac('sha256', this.secret).update(raw).digest('hex'));
    const given = Buffer.from(header);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
