import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/*
 * A stand-in for a partner's webhook endpoint that checks what we send the way a careful partner
 * would, straight from the published contract. It deliberately does not reuse our signing code or
 * header constants: a double that shares the sender's assumptions cannot catch them being wrong.
 */

/** The body the contract promises. */
export type WebhookEnvelope = { id: string; event: string; timestamp: string; data: Record<string, unknown> };

export type ReceivedRequest = {
  method: string;
  path: string;
  /** As Node delivers them: names lowercased. */
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The parsed JSON, or null when the body is not JSON. */
  body: unknown;
  receivedAt: Date;
  signatureValid: boolean;
  /** What violates the contract; empty for a well-formed delivery. */
  problems: string[];
  /** The status this receiver answered with. */
  status: number;
};

/** A request answered 2xx: it passed every check, so its body is a well-formed envelope. */
export type AcceptedWebhook = ReceivedRequest & { body: WebhookEnvelope };

export type PartnerReceiverOptions = {
  /** Serve https with this key pair (see createTestCertificates); plain http otherwise. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** The signing secret, if already known; more can be registered after start. */
  secret?: string;
};

export interface PartnerReceiver {
  /** `https://localhost:PORT/hooks` with tls (the certificate names localhost), else `http://127.0.0.1:PORT/hooks`. */
  readonly url: string;
  /** Replaces all registered secrets with this one. */
  setSecret(secret: string): void;
  /** Accepts this secret too, as a partner does while a secret is being rotated. */
  addSecret(secret: string): void;
  /** The next `count` well-formed deliveries are answered with `status` instead of 200 (and not accepted). */
  failNext(count: number, status?: number): void;
  /** The next `count` requests, well-formed or not, are answered `ms` late. */
  delayNext(count: number, ms: number): void;
  /** Every request, in arrival order. */
  requests(): ReceivedRequest[];
  /** Connections accepted so far: over https, TLS handshakes completed. */
  connections(): number;
  /** Accepted deliveries, one per event id (the first), as a partner that de-duplicates sees them. */
  events(): AcceptedWebhook[];
  /**
   * Resolves with all accepted events matching `predicate` once there are at least `count`;
   * rejects after `timeoutMs` with a list of everything received.
   */
  waitFor(predicate: (event: AcceptedWebhook) => boolean, timeoutMs?: number, count?: number): Promise<AcceptedWebhook[]>;
  /** Stops listening, drops open connections and pending delayed answers, rejects pending waitFor calls. */
  close(): Promise<void>;
}

const PATH = '/hooks';
const MAX_CLOCK_SKEW_SECONDS = 5 * 60;
const USER_AGENT_PREFIX = 'campaign-ops-webhooks/';
const SIGNATURE_PATTERN = /^sha256=[0-9a-f]{64}$/;
const ISO_MILLIS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function singleHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return null;
  }
}

function requestLineProblems(method: string, path: string, headers: IncomingHttpHeaders): string[] {
  const problems: string[] = [];
  if (method !== 'POST') problems.push(`method must be POST, got ${method}`);
  if (path !== PATH) problems.push(`path must be ${PATH}, got ${path}`);

  const contentType = singleHeader(headers, 'content-type');
  const [mediaType, ...params] = (contentType ?? '').split(';').map((part) => part.trim().toLowerCase());
  const charset = params.find((param) => param.startsWith('charset='));
  if (mediaType !== 'application/json' || (charset !== undefined && charset !== 'charset=utf-8')) {
    problems.push(`content-type must be application/json, got ${JSON.stringify(contentType ?? null)}`);
  }

  const userAgent = singleHeader(headers, 'user-agent') ?? '';
  if (!userAgent.startsWith(USER_AGENT_PREFIX) || userAgent.length === USER_AGENT_PREFIX.length) {
    problems.push(`user-agent must be ${USER_AGENT_PREFIX}<version>, got ${JSON.stringify(userAgent)}`);
  }
  return problems;
}

function envelopeHeaderProblems(headers: IncomingHttpHeaders, body: unknown, nowSeconds: number): string[] {
  const problems: string[] = [];

  const timestamp = singleHeader(headers, 'x-service-timestamp');
  if (timestamp === undefined) problems.push('x-service-timestamp is missing');
  else if (!/^\d{1,12}$/.test(timestamp)) {
    problems.push(`x-service-timestamp must be integer unix seconds, got ${JSON.stringify(timestamp)}`);
  } else if (Math.abs(nowSeconds - Number(timestamp)) > MAX_CLOCK_SKEW_SECONDS) {
    problems.push(`x-service-timestamp ${timestamp} is more than ${MAX_CLOCK_SKEW_SECONDS} s from now (${nowSeconds})`);
  }

  const envelope = isObject(body) ? body : {};
  const event = singleHeader(headers, 'x-service-event');
  if (event === undefined) problems.push('x-service-event is missing');
  else if (event !== envelope.event) problems.push(`x-service-event ${JSON.stringify(event)} differs from body.event`);

  const eventId = singleHeader(headers, 'x-service-event-id');
  if (eventId === undefined) problems.push('x-service-event-id is missing');
  else if (eventId !== envelope.id) problems.push(`x-service-event-id ${JSON.stringify(eventId)} differs from body.id`);

  const deliveryId = singleHeader(headers, 'x-service-delivery-id');
  if (deliveryId === undefined) problems.push('x-service-delivery-id is missing');
  else if (!/^dlv_\S+$/.test(deliveryId)) {
    problems.push(`x-service-delivery-id must be dlv_…, got ${JSON.stringify(deliveryId)}`);
  }

  return problems;
}

function bodyProblems(body: unknown): string[] {
  if (body === null) return ['body is not JSON'];
  if (!isObject(body)) return ['body must be a JSON object'];
  const problems: string[] = [];
  if (typeof body.id !== 'string' || !/^evt_\S+$/.test(body.id)) problems.push('body.id must be a string evt_…');
  if (typeof body.event !== 'string' || body.event === '') problems.push('body.event must be a non-empty string');
  const { timestamp } = body;
  // The round trip also rejects impossible dates such as 2024-02-30.
  const isIsoMillis =
    typeof timestamp === 'string' && ISO_MILLIS_UTC.test(timestamp) && !Number.isNaN(Date.parse(timestamp)) && new Date(timestamp).toISOString() === timestamp;
  if (!isIsoMillis) {
    problems.push('body.timestamp must be ISO 8601 UTC with milliseconds, e.g. 2024-05-01T12:00:00.000Z');
  }
  if (!isObject(body.data)) problems.push('body.data must be an object');
  return problems;
}

/** Checks the signature over the bytes received, as the contract tells partners to. */
function checkSignature(header: string | undefined, rawBody: Buffer, secrets: readonly string[]): { valid: boolean; problem?: string } {
  if (header === undefined) return { valid: false, problem: 'x-service-signature is missing' };
  if (!SIGNATURE_PATTERN.test(header)) {
    return { valid: false, problem: 'x-service-signature must be sha256=<64 lowercase hex>' };
  }
  if (secrets.length === 0) {
    return { valid: false, problem: 'no secret registered to verify x-service-signature' };
  }
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  const valid = secrets.some((secret) => timingSafeEqual(given, createHmac('sha256', secret).update(rawBody).digest()));
  return valid ? { valid } : { valid, problem: 'x-service-signature does not verify against any registered secret' };
}

function describeRequest(request: ReceivedRequest, index: number): string {
  const envelope = isObject(request.body) ? request.body : {};
  const deliveryId = singleHeader(request.headers, 'x-service-delivery-id') ?? '?';
  const what = `event=${String(envelope.event ?? '?')} id=${String(envelope.id ?? '?')} delivery=${deliveryId}`;
  const problems = request.problems.length > 0 ? ` problems: ${request.problems.join('; ')}` : '';
  return `  ${index + 1}. ${request.status} ${request.method} ${request.path} ${what}${problems}`;
}

function answerBody(status: number, problems: string[]): string {
  if (problems.length > 0) return JSON.stringify({ problems });
  return JSON.stringify(status >= 200 && status < 300 ? { received: true } : { error: 'simulated failure' });
}

type Waiter = { check: () => void; fail: (error: Error) => void };

class FakePartner implements PartnerReceiver {
  private secrets: string[] = [];
  private readonly failures: number[] = [];
  private readonly delays: number[] = [];
  private readonly received: ReceivedRequest[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly pendingAnswers = new Set<NodeJS.Timeout>();
  private connectionCount = 0;

  constructor(
    private readonly server: Server,
    readonly url: string,
    secret: string | undefined,
  ) {
    if (secret !== undefined) this.secrets.push(secret);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.receive(req, res));
    server.on(url.startsWith('https:') ? 'secureConnection' : 'connection', () => this.connectionCount++);
  }

  setSecret(secret: string): void {
    this.secrets = [secret];
  }

  addSecret(secret: string): void {
    this.secrets.push(secret);
  }

  failNext(count: number, status = 500): void {
    for (let i = 0; i < count; i++) this.failures.push(status);
  }

  delayNext(count: number, ms: number): void {
    for (let i = 0; i < count; i++) this.delays.push(ms);
  }

  requests(): ReceivedRequest[] {
    return [...this.received];
  }

  connections(): number {
    return this.connectionCount;
  }

  events(): AcceptedWebhook[] {
    const byId = new Map<string, AcceptedWebhook>();
    for (const request of this.received) {
      if (request.status < 200 || request.status >= 300) continue;
      const accepted = request as AcceptedWebhook;
      if (!byId.has(accepted.body.id)) byId.set(accepted.body.id, accepted);
    }
    return [...byId.values()];
  }

  waitFor(predicate: (event: AcceptedWebhook) => boolean, timeoutMs = 5000, count = 1): Promise<AcceptedWebhook[]> {
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
      };
      const waiter: Waiter = {
        check: () => {
          try {
            const matching = this.events().filter(predicate);
            if (matching.length < count) return;
            finish();
            resolve(matching);
          } catch (error) {
            finish();
            reject(error);
          }
        },
        fail: (error) => {
          finish();
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        const found = this.events().filter(predicate).length;
        const wanted = `wanted ${count} accepted webhook(s) matching the predicate within ${timeoutMs} ms`;
        waiter.fail(new Error(`waitFor: ${wanted}, found ${found}. ${this.report()}`));
      }, timeoutMs);
      this.waiters.add(waiter);
      waiter.check();
    });
  }

  async close(): Promise<void> {
    for (const timer of this.pendingAnswers) clearTimeout(timer);
    this.pendingAnswers.clear();
    const closed = new Error(`waitFor: the receiver was closed. ${this.report()}`);
    for (const waiter of [...this.waiters]) waiter.fail(closed);
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await stopped;
  }

  private report(): string {
    if (this.received.length === 0) return 'Received no requests.';
    return `Received ${this.received.length} request(s):\n${this.received.map(describeRequest).join('\n')}`;
  }

  private receive(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => this.answer(req, res, Buffer.concat(chunks)));
    // A sender that gives up mid-body is its business; there is nothing to record.
    req.on('error', () => undefined);
  }

  private answer(req: IncomingMessage, res: ServerResponse, rawBody: Buffer): void {
    const receivedAt = new Date();
    const method = req.method ?? '';
    const path = new URL(req.url ?? '/', 'http://receiver').pathname;
    const body = parseJson(rawBody);
    const signature = checkSignature(singleHeader(req.headers, 'x-service-signature'), rawBody, this.secrets);
    const problems = [
      ...requestLineProblems(method, path, req.headers),
      ...envelopeHeaderProblems(req.headers, body, Math.floor(receivedAt.getTime() / 1000)),
      ...(signature.problem !== undefined ? [signature.problem] : []),
      ...bodyProblems(body),
    ];
    // A simulated outage only applies to deliveries we would otherwise accept.
    const status = problems.length > 0 ? 400 : (this.failures.shift() ?? 200);

    // Recorded on arrival, before any delayed answer: like a real partner that handled the event
    // but answered too late, a delivery the sender gave up on has still been received.
    this.received.push({
      method,
      path,
      headers: req.headers,
      rawBody: rawBody.toString('utf8'),
      body,
      receivedAt,
      signatureValid: signature.valid,
      problems,
      status,
    });
    for (const waiter of [...this.waiters]) waiter.check();

    const payload = answerBody(status, problems);
    const send = () => {
      if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/json' }).end(payload);
    };
    const delay = this.delays.shift();
    if (delay === undefined) {
      send();
      return;
    }
    const timer = setTimeout(() => {
      this.pendingAnswers.delete(timer);
      send();
    }, delay);
    this.pendingAnswers.add(timer);
  }
}

/** Starts a fake partner endpoint on 127.0.0.1 with a random port. */
export async function startPartnerReceiver(options: PartnerReceiverOptions = {}): Promise<PartnerReceiver> {
  const server = options.tls ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }) : createHttpServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = options.tls ? `https://localhost:${port}${PATH}` : `http://127.0.0.1:${port}${PATH}`;
  return new FakePartner(server, url, options.secret);
}
