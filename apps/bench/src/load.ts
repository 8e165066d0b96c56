import { Agent, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

/** No single request may hold the bench longer than this. */
export const REQUEST_TIMEOUT_MS = 30_000;

export type Sent = {
  /** performance.now() just before the request was created and written. */
  startedAt: number;
  latencyMs: number;
  /** HTTP status, or 0 when no response came (connection error, timeout). */
  status: number;
  /** The parsed JSON answer, or null. */
  body: any;
  error?: string;
};

export type RunResult = { wallMs: number; sent: Sent[] };

/**
 * A closed loop: `concurrency` workers, each sending its next request as soon as its previous
 * answer is fully read, until `count` requests have been sent. Every measurement of the bench
 * goes through here, so the baseline and the service are driven by exactly the same client at
 * exactly the same concurrency.
 *
 * The client is node:http with a keep-alive Agent of `concurrency` sockets rather than the global
 * fetch: on this 2-core machine fetch (undici) costs about twice the CPU per request, CPU the
 * client would take from the server it measures. One fresh Agent per run, so no run inherits
 * another's sockets.
 */
export async function closedLoop(count: number, concurrency: number, url: string, headers: Record<string, string>, body: string): Promise<RunResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const payload = Buffer.from(body, 'utf8');
  const requestHeaders = { ...headers, 'Content-Length': String(payload.length) };
  const sent: Sent[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      sent[index] = await sendOne(agent, url, requestHeaders, payload);
    }
  };
  const start = performance.now();
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    return { wallMs: performance.now() - start, sent };
  } finally {
    agent.destroy();
  }
}

function sendOne(agent: Agent, url: string, headers: Record<string, string>, payload: Buffer): Promise<Sent> {
  return new Promise((done) => {
    const startedAt = performance.now();
    let settled = false;
    const finish = (status: number, text: string, error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const latencyMs = performance.now() - startedAt;
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        // reported through status/error
      }
      const failed = status < 200 || status >= 300;
      done({ startedAt, latencyMs, status, body: parsed, ...(error !== undefined ? { error } : failed ? { error: text.slice(0, 300) } : {}) });
    };
    const request = httpRequest(url, { method: 'POST', agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => finish(response.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
      response.on('error', (error) => finish(0, '', describe(error)));
    });
    // The whole exchange is bounded, not just the idle time between packets.
    const timer = setTimeout(() => {
      finish(0, '', `no complete answer within ${REQUEST_TIMEOUT_MS} ms`);
      request.destroy();
    }, REQUEST_TIMEOUT_MS);
    request.on('error', (error) => finish(0, '', describe(error)));
    request.end(payload);
  });
}

function describe(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ? `${e.code}: ${e.message}` : e.message;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export const ascending = (values: number[]) => [...values].sort((a, b) => a - b);
