import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isForbiddenAddress } from './forbidden-address';
import type { UrlPolicy } from './policy';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export type UrlCheckCode = 'url_invalid' | 'url_not_https' | 'url_forbidden_host';

export type UrlCheckResult = { ok: true; url: URL } | { ok: false; code: UrlCheckCode; message: string };

/** Resolves a host name to all its IP addresses; rejects when it does not resolve. */
export type ResolveHost = (host: string) => Promise<string[]>;

/*
 * Host names that never lead to a partner on the internet: localhost (RFC 6761), .internal
 * (reserved for private use; includes metadata.google.internal) and .local (mDNS on the local link).
 * Matched on the last label so "localhost" and "x.localhost" are both caught.
 */
const RESERVED_TOP_LABELS = new Set(['localhost', 'internal', 'local']);

// Messages go back to the customer who registered the URL. They never echo the URL (its query
// may carry the partner's token) nor the addresses a name resolved to (that would let a customer
// map our internal DNS).
const MESSAGES = {
  notString: 'URL must be a string',
  tooLong: `URL must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`,
  unparsable: 'URL is not a valid absolute URL',
  credentials: 'URL must not contain a user name or password',
  notHttps: 'URL must use https',
  forbiddenHost: 'host is not allowed: it is or resolves to a loopback, private, link-local or metadata address',
  doesNotResolve: 'host does not resolve',
} as const;

function fail(code: UrlCheckCode, message: string): UrlCheckResult {
  return { ok: false, code, message };
}

/** The host as a bare name or IP: no IPv6 brackets, no trailing root dot ("localhost." is localhost). */
function bareHost(url: URL): string {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function isReservedName(host: string): boolean {
  const labels = host.split('.');
  return RESERVED_TOP_LABELS.has(labels[labels.length - 1]);
}

/**
 * Every check that needs no DNS: type, length, syntax, credentials, scheme, reserved names and
 * IP-literal hosts. A sender runs this before each delivery; names are then judged at connect
 * time by guardedLookup.
 */
export function precheckWebhookUrl(raw: unknown, policy: UrlPolicy): UrlCheckResult {
  if (typeof raw !== 'string') return fail('url_invalid', MESSAGES.notString);
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return fail('url_invalid', MESSAGES.tooLong);

  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail('url_invalid', MESSAGES.unparsable);
  }

  // Credentials in a URL end up in logs and in our database in clear text.
  if (url.username !== '' || url.password !== '') return fail('url_invalid', MESSAGES.credentials);

  const httpAllowed = url.protocol === 'http:' && policy.allowHttp;
  if (url.protocol !== 'https:' && !httpAllowed) return fail('url_not_https', MESSAGES.notHttps);

  if (!policy.allowPrivateNetworks) {
    const host = bareHost(url);
    const forbidden = isIP(host) !== 0 ? isForbiddenAddress(host) : isReservedName(host);
    if (forbidden) return fail('url_forbidden_host', MESSAGES.forbiddenHost);
  }
  return { ok: true, url };
}

async function resolveWithDns(host: string): Promise<string[]> {
  // The system resolver, like the HTTP client that will deliver: /etc/hosts counts too.
  // Every address is judged, so the order they come in (verbatim or IPv4 first) does not matter.
  const records = await lookup(host, { all: true });
  return records.map((record) => record.address);
}

/**
 * Whether a customer may register `raw` as a webhook URL under `policy`.
 * On top of precheckWebhookUrl, resolves a host name and refuses it if any of its addresses is
 * forbidden: the delivery could be sent to any of them. This is only a registration-time
 * snapshot; DNS can change later, which is why deliveries also connect through guardedLookup.
 */
export async function checkWebhookUrl(raw: unknown, policy: UrlPolicy, resolve: ResolveHost = resolveWithDns): Promise<UrlCheckResult> {
  const prechecked = precheckWebhookUrl(raw, policy);
  if (!prechecked.ok) return prechecked;

  const host = bareHost(prechecked.url);
  if (isIP(host) !== 0) return prechecked; // an IP literal was judged by the precheck

  // Resolve even when private networks are allowed: an unresolvable host is a typo either way.
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    return fail('url_invalid', MESSAGES.doesNotResolve);
  }
  if (addresses.length === 0) return fail('url_invalid', MESSAGES.doesNotResolve);

  if (!policy.allowPrivateNetworks && addresses.some(isForbiddenAddress)) {
    return fail('url_forbidden_host', MESSAGES.forbiddenHost);
  }
  return prechecked;
}
