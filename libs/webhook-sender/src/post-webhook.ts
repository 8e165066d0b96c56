import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { performance } from 'node:perf_hooks';
import { FORBIDDEN_HOST_ERROR_CODE, guardedLookup, precheckWebhookUrl, type UrlPolicy } from '@campaign-ops/url-guard';

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

function requestHeaders(headers: Record<string, string>, body: Buffer): OutgoingHttpHeaders {
  // We set the length ourselves from the bytes we send; a caller's value could only be wrong.
  const own = Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-length');
  return { ...Object.fromEntries(own), 'Content-Length': body.length };
}

function send(url: URL, request: WebhookRequest): Promise<Outcome> {
  const body = Buffer.from(request.body, 'utf8');
  const options: RequestOptions = {
    method: 'POST',
    headers: requestHeaders(request.headers, body),
    // A fresh connection per delivery: a pooled socket would skip `lookup`, and with it the
    // address check, for every later delivery to that host.
    agent: false,
    // Judges the addresses this very connection is about to use, so a DNS change since
    // registration cannot point it inside our network. IP-literal hosts never reach `lookup`;
    // precheckWebhookUrl has judged those.
    lookup: guardedLookup(request.policy),
    ...(request.ca !== undefined ? { ca: request.ca } : {}), // only https reads it
  };
  const requestFn = url.protocol === 'https:' ? httpsRequest : httpRequest;

  return new Promise((resolve) => {
    let statusCode: number | null = null;
    let settled = false;

    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
      // Releases the socket whatever state it is in; a later 'error' lands in the no-op above.
      req.destroy();
    };
    // Once a status has arrived it decides the outcome, even if reading the body is cut short.
    const statusOr = (failure: Outcome): Outcome => (statusCode !== null ? outcomeOfStatus(statusCode) : failure);

    const req = requestFn(url, options, (res) => {
      // Always set on a client-side response; the type is shared with server-side requests.
      statusCode = res.statusCode as number;
      const answered = outcomeOfStatus(statusCode);
      // Read (and drop) the body so the exchange ends cleanly, but no more than we are willing to.
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) settle(answered);
      });
      // 'close' follows 'end', and also comes when the response is aborted or destroyed.
      res.on('close', () => settle(answered));
    });

    const timer = setTimeout(() => settle(statusOr(TIMED_OUT)), request.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => settle(statusOr(outcomeOfError(error))));
    req.end(body);
  });
}

/**
 * POSTs one webhook and reports how the partner answered. Never rejects for a delivery problem:
 * every failure, including a URL the policy now refuses, comes back as `ok: false` with a code.
 *
 * The URL is re-checked against the policy before sending because policies and rules change after
 * registration; the host's addresses are checked at connect time (see guardedLookup).
 */
export async function postWebhook(request: WebhookRequest): Promise<WebhookResult> {
  if (!(Number.isFinite(request.timeoutMs) && request.timeoutMs > 0)) {
    throw new RangeError(`postWebhook: timeoutMs must be a positive number, got ${request.timeoutMs}`);
  }
  const started = performance.now();
  const checked = precheckWebhookUrl(request.url, request.policy);
  const outcome: Outcome = checked.ok
    ? await send(checked.url, request)
    : { ok: false, statusCode: null, error: checked.code === 'url_forbidden_host' ? 'forbidden_host' : checked.code };
  return { ...outcome, durationMs: Math.round(performance.now() - started) };
}
