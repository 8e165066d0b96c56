import { createHmac, timingSafeEqual } from 'node:crypto';
import { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { performance } from 'node:perf_hooks';

/** A webhook body is a few hundred bytes; anything near this is not ours. */
const MAX_BODY_BYTES = 1024 * 1024;

/** One endpoint's view: `https://127.0.0.1:PORT/hooks/<name>`, with its own signing secret. */
export class Route {
  secret = '';
  /** performance.now() at which the first validly signed dispatch.completed arrived, per dispatch. */
  readonly completedAt = new Map<string, number>();
  /** The event's own `timestamp` (when the service recorded it), epoch ms, per dispatch (dispatch.completed). */
  readonly eventTimestamp = new Map<string, number>();
  /** Every distinct event accepted (answered 200): event id -> arrival. */
  readonly accepted = new Map<string, number>();
  /** Accepted distinct events by dispatch: `${dispatch_id} ${event}`. */
  readonly acceptedByDispatch = new Set<string>();
  /** Distinct event ids answered with the failure status at least once. */
  readonly refusedEvents = new Set<string>();
  /** Requests answered with the failure status. */
  refused = 0;
  /** A validly signed event already accepted (a retry after a lost answer, or a double send). */
  duplicates = 0;
  /** Until this performance.now(), answer `failure.status` after `failure.delayMs` instead of 200. */
  failure: { until: number; delayMs: number; status: number } | null = null;

  constructor(readonly url: string) {}
}

/**
 * The partner's side of the benchmark: an https server on 127.0.0.1 with a certificate of a CA
 * made for this run (the service trusts it through NODE_EXTRA_CA_CERTS, as production trusts a
 * partner's public CA), in the bench process, where the send times are taken, so both ends of a
 * latency come from one clock. It checks `X-SERVICE-Signature` itself, as a partner would, rather
 * than with the service's own code. One origin, many endpoints (paths), each with its own secret
 * and behaviour; it counts TCP connections and TLS handshakes, to see whether the sender reuses
 * its connections.
 */
export class WebhookReceiver {
  readonly routes = new Map<string, Route>();
  /** TCP connections accepted, and TLS handshakes completed, since start. */
  connections = 0;
  handshakes = 0;
  /** Requests of any kind, and those with a missing or wrong signature (answered 401). */
  requests = 0;
  badSignatures = 0;
  /** Bodies that were too large, not JSON, or posted to a path that is no endpoint. */
  malformed = 0;
  private readonly pendingAnswers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static start(tls: { key: string; cert: string }): Promise<WebhookReceiver> {
    return new Promise((done, fail) => {
      let receiver: WebhookReceiver;
      const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (request, response) => receiver.handle(request, response));
      // A partner's server keeps idle connections a while; Node's default of 5 s would close
      // connections the sender meant to reuse between bursts.
      server.keepAliveTimeout = 60_000;
      server.on('connection', () => receiver.connections++);
      server.on('secureConnection', () => receiver.handshakes++);
      server.once('error', fail);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        receiver = new WebhookReceiver(server, `https://127.0.0.1:${port}`);
        done(receiver);
      });
    });
  }

  route(name: string): Route {
    let route = this.routes.get(name);
    if (!route) {
      route = new Route(`${this.origin}/hooks/${name}`);
      this.routes.set(name, route);
    }
    return route;
  }

  /** Requests answered, connections and handshakes, to diff across a phase. */
  counters(): { requests: number; connections: number; handshakes: number } {
    return { requests: this.requests, connections: this.connections, handshakes: this.handshakes };
  }

  close(): Promise<void> {
    for (const timer of this.pendingAnswers) clearTimeout(timer);
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
      this.requests++;
      const route = this.routes.get((request.url ?? '').replace(/^\/hooks\//, ''));
      if (tooLarge || !route) return this.answer(response, tooLarge ? 413 : 404, () => this.malformed++);
      const raw = Buffer.concat(chunks);
      if (!signatureValid(route.secret, raw, request.headers['x-service-signature'])) {
        // A real partner refuses these; the service would retry, which a benchmark should show.
        return this.answer(response, 401, () => this.badSignatures++);
      }
      let body: { id?: unknown; event?: unknown; timestamp?: unknown; data?: { dispatch_id?: unknown } };
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return this.answer(response, 400, () => this.malformed++);
      }
      const eventId = typeof body?.id === 'string' ? body.id : '';
      const failure = route.failure;
      if (failure && arrivedAt < failure.until) {
        route.refused++;
        route.refusedEvents.add(eventId);
        const timer = setTimeout(() => {
          this.pendingAnswers.delete(timer);
          this.answer(response, failure.status);
        }, failure.delayMs);
        this.pendingAnswers.add(timer);
        return;
      }
      if (route.accepted.has(eventId)) return this.answer(response, 200, () => route.duplicates++);
      route.accepted.set(eventId, arrivedAt);
      const dispatchId = body?.data?.dispatch_id;
      if (typeof dispatchId === 'string') route.acceptedByDispatch.add(`${dispatchId} ${String(body.event)}`);
      if (body.event === 'dispatch.completed' && typeof dispatchId === 'string' && !route.completedAt.has(dispatchId)) {
        route.completedAt.set(dispatchId, arrivedAt);
        if (typeof body.timestamp === 'string') route.eventTimestamp.set(dispatchId, Date.parse(body.timestamp));
      }
      this.answer(response, 200);
    });
    request.on('error', () => response.destroy());
  }

  private answer(response: ServerResponse, status: number, count?: () => void): void {
    count?.();
    if (!response.destroyed) response.writeHead(status, { 'Content-Type': 'text/plain' }).end();
  }
}

export function sign(secret: string, raw: string | Buffer): string {
  return 'sha256=' + createHmac('sha256', secret).update(raw).digest('hex');
}

function signatureValid(secret: string, raw: Buffer, header: string | string[] | undefined): boolean {
  if (!secret || typeof header !== 'string') return false;
  const expected = Buffer.from(sign(secret, raw));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
