import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { FORBIDDEN_HOST_ERROR_CODE, precheckWebhookUrl, type UrlPolicy } from '@campaign-ops/url-guard';
import { DEFAULT_CONNECTION_LIMITS, PartnerConnections, type ConnectionLimits } from './partner-connections';

/** How much of a partner's response body we read before hanging up: we only need the status. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export type WebhookRequest = {
  url: string;
  /** The exact bytes that were signed; sent as UTF-8. */
  body: string;
  headers: Record<string, string>;
  /** Budget for the whole exchange: DNS, connect, TLS, sending, and the response. */
  timeoutMs: number;
  policy: UrlPolicy;
  /**
   * Trust anchors for https, replacing Node's default CA store for this request. Meant for tests
   * against a local CA; production leaves it unset, so Node's bundled CAs plus NODE_EXTRA_CA_CERTS apply.
   */
  ca?: string | Buffer;
};

export type WebhookResult = {
  /** The partner answered 2xx in time. */
  ok: boolean;
  /** The partner's status, or null when no response arrived. */
  statusCode: number | null;
  /**
   * Null on success; otherwise a short code for logs and the delivery record: `http_<status>`,
   * `timeout`, `forbidden_host`, `url_not_https`, `url_invalid`, or the system/TLS error code
   * (`ECONNREFUSED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, ...), or `request_failed` for an error
   * without a code. Never a message, which could carry the URL or a header.
   */
  error: string | null;
  durationMs: number;
};

type Outcome = Omit<WebhookResult, 'durationMs'>;

const TIMED_OUT: Outcome = { ok: false, statusCode: null, error: 'timeout' };

function outcomeOfStatus(statusCode: number): Outcome {
  // Redirects are not followed: a partner must give us the final URL, and following one would
  // let a URL checked at registration send the signed body somewhere never checked.
  const ok = statusCode >= 200 && statusCode < 300;
  return { ok, statusCode, error: ok ? null : `http_${statusCode}` };
}

function outcomeOfError(error: NodeJS.ErrnoException): Outcome {
  const code = error.code === FORBIDDEN_HOST_ERROR_CODE ? 'forbidden_host' : (error.code ?? 'request_failed');
  return { ok: false, statusCode: null, error: code };
}

function requestHeaders(headers: Record<string, string>, body: Buffer): Record<string, string> {
  // We set the length ourselves from the bytes we send; a caller's value could only be wrong.
  const own = Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-length');
  return { ...Object.fromEntries(own), 'Content-Length': String(body.length) };
}

/** Reads (and drops) the body so the connection can serve the next delivery, but no more than we are willing to. */
async function drain(body: Dispatcher.ResponseData['body']): Promise<void> {
  let received = 0;
  for await (const chunk of body) {
    received += (chunk as Buffer).length;
    // Leaving the loop destroys the body, and with it this connection: it is not reused.
    if (received > MAX_RESPONSE_BYTES) return;
  }
}

async function send(agent: Dispatcher, url: URL, request: WebhookRequest): Promise<Outcome> {
  const body = Buffer.from(request.body, 'utf8');
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), request.timeoutMs);
  let statusCode: number | null = null;
  try {
    // undici follows no redirect unless told to (see outcomeOfStatus).
    const response = await agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: requestHeaders(request.headers, body),
      body,
      signal: abort.signal,
    });
    statusCode = response.statusCode;
    await drain(response.body);
    // undici checks an idle connection in the next turn of the event loop before it is used again,
    // and until then its pool opens another for a new request: waiting that turn lets the caller's
    // next delivery reuse this connection instead of opening one more.
    await nextTurn();
    return outcomeOfStatus(statusCode);
  } catch (error) {
    // Once a status has arrived it decides the outcome, even if reading the body is cut short.
    if (statusCode !== null) return outcomeOfStatus(statusCode);
    return abort.signal.aborted ? TIMED_OUT : outcomeOfError(error as NodeJS.ErrnoException);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends webhooks over keep-alive connections, pooled per origin (and per policy and trust
 * anchors: see PartnerConnections). `close` at shutdown.
 */
export class WebhookSender {
  private readonly connections: PartnerConnections;

  constructor(limits: Partial<ConnectionLimits> = {}) {
    this.connections = new PartnerConnections({ ...DEFAULT_CONNECTION_LIMITS, ...limits });
  }

  /**
   * POSTs one webhook and reports how the partner answered. Never rejects for a delivery problem:
   * every failure, including a URL the policy now refuses, comes back as `ok: false` with a code.
   *
   * The URL is re-checked against the policy before sending because policies and rules change
   * after registration; the host's addresses are checked whenever a connection is opened (see
   * guardedLookup).
   */
  async post(request: WebhookRequest): Promise<WebhookResult> {
    if (!(Number.isFinite(request.timeoutMs) && request.timeoutMs > 0)) {
      throw new RangeError(`postWebhook: timeoutMs must be a positive number, got ${request.timeoutMs}`);
    }
    const started = performance.now();
    const checked = precheckWebhookUrl(request.url, request.policy);
    const outcome: Outcome = checked.ok
      ? await send(this.connections.for(request.policy, request.ca), checked.url, request)
      : { ok: false, statusCode: null, error: checked.code === 'url_forbidden_host' ? 'forbidden_host' : checked.code };
    return { ...outcome, durationMs: Math.round(performance.now() - started) };
  }

  /** Closes every pooled connection once the requests under way are done. */
  close(): Promise<void> {
    return this.connections.close();
  }
}

const shared = new WebhookSender();

/** WebhookSender.post on a process-wide sender, whose idle connections close by themselves. */
export function postWebhook(request: WebhookRequest): Promise<WebhookResult> {
  return shared.post(request);
}
