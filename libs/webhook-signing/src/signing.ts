import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sha256=';
// The contract fixes the hex as lowercase; anything else is not a signature we produced.
const HEADER_PATTERN = /^sha256=[0-9a-f]{64}$/;

function digest(secret: string, rawBody: string | Buffer): Buffer {
  // The key is the whole secret string ("whsec_..."), as partners are told to use it verbatim.
  return createHmac('sha256', secret).update(rawBody).digest();
}

/**
 * The `X-SERVICE-Signature` value for a body: `sha256=<lowercase hex HMAC-SHA256(secret, rawBody)>`.
 * Sign the exact bytes that go on the wire; re-serialising the JSON would change them.
 */
export function signBody(secret: string, rawBody: string | Buffer): string {
  // An empty key still yields a valid-looking HMAC that anyone can forge: refuse it loudly.
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError('signBody: the signing secret must be a non-empty string');
  }
  return PREFIX + digest(secret, rawBody).toString('hex');
}

/**
 * Whether `header` is a valid signature of `rawBody` under `secret`.
 * Never throws: a missing or malformed header, or an empty secret, is simply not valid.
 * The comparison is constant-time so a caller cannot learn the expected signature byte by byte.
 */
export function verifySignature(secret: string, rawBody: string | Buffer, header: string | undefined): boolean {
  if (typeof secret !== 'string' || secret.length === 0) return false;
  if (typeof header !== 'string' || !HEADER_PATTERN.test(header)) return false;
  const given = Buffer.from(header.slice(PREFIX.length), 'hex');
  // Same length is guaranteed by the pattern (32 bytes), which timingSafeEqual requires.
  return timingSafeEqual(given, digest(secret, rawBody));
}
