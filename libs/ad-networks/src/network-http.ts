import { Agent, Dispatcher, request } from 'undici';
import { ProviderError } from '@campaign-ops/channels';

/**
 * The one HTTP client of the live adapters: keep-alive connections per origin (an undici Agent
 * keeps a pool per origin), a timeout over the whole call (connect, headers and body), JSON, form
 * and raw (SOAP) bodies. It never throws on an HTTP status: each channel reads the answer and
 * classifies it by its network's rules. Only a network that does not answer at all (refused or
 * reset connection, TLS failure, timeout) throws here: `transient` with `providerCode: null`.
 *
 * Messages name the method and path only: query strings and bodies carry codes, secrets and tokens.
 */
export interface NetworkHttpOptions {
  /** Tests pass an Agent that trusts the fake networks' CA; production uses Node's CA store. */
  dispatcher?: Dispatcher;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface NetworkCall {
  method: HttpMethod;
  url: string;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string | undefined>;
  /** Sent as `application/json`. */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded`. */
  form?: Record<string, string | undefined>;
  /** Sent as is, with `contentType` (e.g. SOAP XML). */
  raw?: { body: string; contentType: string };
}

export interface NetworkAnswer {
  status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** From `Retry-After` (seconds or an HTTP date), in ms; null without one. */
  retryAfterMs: number | null;
}

export class NetworkHttp {
  private readonly dispatcher: Dispatcher;

  constructor(
    /** Names the network in messages, e.g. `google_ads`. */
    private readonly label: string,
    private readonly timeoutMs: number,
    options: NetworkHttpOptions = {},
  ) {
    this.dispatcher = options.dispatcher ?? defaultDispatcher();
  }

  async call(call: NetworkCall): Promise<NetworkAnswer> {
    const url = withQuery(call.url, call.query);
    const { body, contentType } = encodeBody(call);
    const headers: Record<string, string> = { accept: 'application/json', ...definedOnly(call.headers ?? {}) };
    if (contentType) headers['content-type'] = contentType;
    const signal = AbortSignal.timeout(this.timeoutMs);
    const where = `${call.method} ${new URL(url).pathname}`;
    try {
      const answer = await request(url, { method: call.method, headers, body, signal, dispatcher: this.dispatcher });
      const text = await readCapped(
        answer.body,
        answer.headers['content-length'],
        `${this.label} answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB for ${where}`,
      );
      const flat = flattenHeaders(answer.headers);
      return { status: answer.statusCode, headers: flat, text, json: parseJson(text), retryAfterMs: parseRetryAfter(flat['retry-after']) };
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      if (signal.aborted) throw new ProviderError('transient', `${this.label} did not answer ${where} within ${this.timeoutMs} ms`, null);
      throw new ProviderError('transient', `${this.label} could not be reached for ${where}: ${describe(error)}`, null);
    }
  }
}

/** 429 and 5xx, as every network means them; null for anything the channel must read itself. */
export function statusFault(channel: string, answer: NetworkAnswer, providerCode: string | null = null): ProviderError | null {
  if (answer.status === 429) return new ProviderError('rate_limited', `${channel} asks to slow down (HTTP 429)`, providerCode, 429, answer.retryAfterMs);
  if (answer.status >= 500)
    return new ProviderError('transient', `${channel} failed with HTTP ${answer.status}`, providerCode, answer.status, answer.retryAfterMs);
  return null;
}

/** No network's answer to one of our calls comes near this; past it the answer is a fault, not read further (memory). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** The body as text, or a transient ProviderError once it says or proves to be over MAX_ANSWER_BYTES (the rest is not read). */
async function readCapped(body: Dispatcher.ResponseData['body'], contentLength: string | string[] | undefined, tooLarge: string): Promise<string> {
  if (contentLength !== undefined && Number(contentLength) > MAX_ANSWER_BYTES) {
    body.destroy();
    throw new ProviderError('transient', tooLarge, null);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy();
      throw new ProviderError('transient', tooLarge, null);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

let shared: Agent | null = null;
/** One Agent for every channel of the process: a pool with keep-alive per origin. */
function defaultDispatcher(): Agent {
  shared ??= new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000, connections: 32 });
  return shared;
}

/** At shutdown: closes the process-wide connections of every client built without a dispatcher. */
export async function closeNetworkConnections(): Promise<void> {
  const agent = shared;
  shared = null;
  await agent?.close();
}

/**
 * `Retry-After` as ms: delta-seconds, or an HTTP date (its distance from now, never negative).
 * Anything else is null (the caller then uses its own backoff).
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!/[a-z]/i.test(trimmed)) return null;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function withQuery(url: string, query: NetworkCall['query']): string {
  if (!query) return url;
  const parsed = new URL(url);
  for (const [name, value] of Object.entries(query)) if (value !== undefined) parsed.searchParams.set(name, String(value));
  return parsed.toString();
}

function encodeBody(call: NetworkCall): { body?: string; contentType?: string } {
  if (call.json !== undefined) return { body: JSON.stringify(call.json), contentType: 'application/json' };
  if (call.form) return { body: new URLSearchParams(definedOnly(call.form)).toString(), contentType: 'application/x-www-form-urlencoded' };
  if (call.raw) return { body: call.raw.body, contentType: call.raw.contentType };
  return {};
}

function definedOnly(record: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(record)) if (value !== undefined) out[name] = value;
  return out;
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

function parseJson(text: string): unknown {
  const start = text.trimStart()[0];
  if (start !== '{' && start !== '[') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  const err = error as { code?: string; cause?: { code?: string }; message?: string };
  return err.code ?? err.cause?.code ?? err.message ?? 'connection failed';
}
