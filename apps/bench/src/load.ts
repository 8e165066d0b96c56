import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { performance } from 'node:perf_hooks';

/** No single request may hold the bench longer than this. */
export const REQUEST_TIMEOUT_MS = 30_000;

export type Sent = {
  /**
   * performance.now() at which the request was due: just before it was created and written in a
   * closed loop; its scheduled time in a paced (open) loop, however late the client sent it.
   */
  startedAt: number;
  /** From `startedAt` to the last byte of the answer. */
  latencyMs: number;
  /** HTTP status, or 0 when no response came (connection error, timeout). */
  status: number;
  /** The parsed JSON answer, or null. */
  body: any;
  error?: string;
};

export type RunResult = { wallMs: number; sent: Sent[] };

export type PacedResult = RunResult & {
  /** How late the client sent requests behind their schedule (its own lag, not the server's). */
  sendLagP99Ms: number;
  sendLagMaxMs: number;
  /** performance.now() of the last scheduled send: the end of the offered load. */
  loadEndedAt: number;
};

type Pool = { agent: HttpAgent; request: typeof httpRequest };

/**
 * A keep-alive pool of at most `sockets` connections: node:http's Agent rather than the global
 * fetch, because on this 2-core machine fetch costs about twice the CPU per request, CPU the client
 * would take from the server it measures. (Against a bare node:http server this client does more
 * than 20,000 req/s here; the bench measures and prints that headroom in every run.) One fresh pool
 * per run, so no run inherits another's sockets. https only for the bench's own receiver, trusting
 * `ca`.
 */
function pool(url: string, sockets: number, ca?: string): Pool {
  return new URL(url).protocol === 'https:'
    ? { agent: new HttpsAgent({ keepAlive: true, maxSockets: sockets, ca }), request: httpsRequest as unknown as typeof httpRequest }
    : { agent: new HttpAgent({ keepAlive: true, maxSockets: sockets }), request: httpRequest };
}

/**
 * A closed loop: `concurrency` workers, each sending its next request as soon as its previous
 * answer is fully read, until `count` requests have been sent. The baseline and the service are
 * driven by exactly the same client at exactly the same concurrency.
 */
export async function closedLoop(
  count: number,
  concurrency: number,
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { ca?: string } = {},
): Promise<RunResult> {
  const client = pool(url, concurrency, options.ca);
  const payload = Buffer.from(body, 'utf8');
  const requestHeaders = { ...headers, 'Content-Length': String(payload.length) };
  const sent: Sent[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      sent[index] = await sendOne(client, url, requestHeaders, payload, performance.now());
    }
  };
  const start = performance.now();
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    return { wallMs: performance.now() - start, sent };
  } finally {
    client.agent.destroy();
  }
}

/**
 * An open loop: request i is due at start + i/rate, sent then whatever the server has answered so
 * far, for `durationMs`. Latency counts from the due time, not from when the request got a socket,
 * so a server that falls behind is charged for the queue it causes (no coordinated omission). At
 * most `maxSockets` requests are on the wire; the rest wait in the pool's queue, their clock
 * running. Each is bounded by REQUEST_TIMEOUT_MS from its due time: the run ends at most that long
 * after the last send.
 */
export async function pacedLoop(
  rate: number,
  durationMs: number,
  maxSockets: number,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<PacedResult> {
  const client = pool(url, maxSockets);
  const payload = Buffer.from(body, 'utf8');
  const requestHeaders = { ...headers, 'Content-Length': String(payload.length) };
  const count = Math.max(1, Math.round((rate * durationMs) / 1000));
  const interval = 1000 / rate;
  const sent: Sent[] = new Array(count);
  const answers: Promise<void>[] = [];
  const lags: number[] = [];
  const start = performance.now() + 5;
  const dueAt = (i: number) => start + i * interval;
  let next = 0;
  try {
    await new Promise<void>((done) => {
      const tick = () => {
        const now = performance.now();
        while (next < count && dueAt(next) <= now) {
          const index = next++;
          lags.push(now - dueAt(index));
          answers.push(sendOne(client, url, requestHeaders, payload, dueAt(index)).then((s) => void (sent[index] = s)));
        }
        if (next >= count) return done();
        setTimeout(tick, Math.max(0, dueAt(next) - performance.now()));
      };
      setTimeout(tick, 5);
    });
    await Promise.all(answers);
    const sortedLags = ascending(lags);
    return {
      wallMs: performance.now() - start,
      sent,
      sendLagP99Ms: percentile(sortedLags, 99),
      sendLagMaxMs: sortedLags[sortedLags.length - 1],
      loadEndedAt: dueAt(count - 1),
    };
  } finally {
    client.agent.destroy();
  }
}

function sendOne(client: Pool, url: string, headers: Record<string, string>, payload: Buffer, startedAt: number): Promise<Sent> {
  return new Promise((done) => {
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
    const request = client.request(url, { method: 'POST', agent: client.agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => finish(response.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
      response.on('error', (error) => finish(0, '', describe(error)));
    });
    // The whole exchange is bounded (from when it was due), not just the idle time between packets.
    const timer = setTimeout(
      () => {
        finish(0, '', `no complete answer within ${REQUEST_TIMEOUT_MS} ms`);
        request.destroy();
      },
      Math.max(1, startedAt + REQUEST_TIMEOUT_MS - performance.now()),
    );
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
