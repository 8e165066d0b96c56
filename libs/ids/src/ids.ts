import { createHash, randomBytes, randomFillSync } from 'node:crypto';

// Crockford base32, the ULID alphabet: ids sort by creation time as strings.
const ENCODING = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export type IdPrefix = 'acct' | 'key' | 'dsp' | 'con' | 'whk' | 'whsec' | 'evt' | 'dlv' | 'req';

let lastTime = 0;
let lastRandom: Uint8Array = new Uint8Array(10);

function encodeTime(time: number): string {
  let out = '';
  let t = time;
  for (let i = 0; i < 10; i++) {
    out = ENCODING[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  // 80 bits -> 16 base32 characters: two halves of 40 bits (5 bytes, 8 characters), each exact in a double.
  return encode40(bytes, 0) + encode40(bytes, 5);
}

function encode40(bytes: Uint8Array, from: number): string {
  let bits = 0;
  for (let i = from; i < from + 5; i++) bits = bits * 256 + bytes[i];
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = ENCODING[bits % 32] + out;
    bits = Math.floor(bits / 32);
  }
  return out;
}

function increment(bytes: Uint8Array): Uint8Array {
  const next = new Uint8Array(bytes);
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i] < 255) {
      next[i]++;
      return next;
    }
    next[i] = 0;
  }
  return next;
}

/**
 * Random bytes for ULIDs, drawn from the CSPRNG a pool at a time: one call fills 410 ids' worth
 * (a call costs far more than the bytes it returns). Each part is copied out and the pool's bytes
 * are used once.
 */
const RANDOM_POOL = new Uint8Array(4096);
let poolOffset = RANDOM_POOL.length;

function randomPart(): Uint8Array {
  if (poolOffset + 10 > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    poolOffset = 0;
  }
  poolOffset += 10;
  return RANDOM_POOL.slice(poolOffset - 10, poolOffset);
}

/** A monotonic ULID: strictly increasing within one process, time-ordered across processes. */
export function ulid(now: number = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom);
  } else {
    lastTime = now;
    lastRandom = randomPart();
  }
  return encodeTime(lastTime) + encodeRandom(lastRandom);
}

/** A ULID whose random part is derived from `seed`: the same seed and time give the same id. */
export function deterministicUlid(time: number, seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  return encodeTime(time) + encodeRandom(digest.subarray(0, 10));
}

export function newId(prefix: IdPrefix, now?: number): string {
  return `${prefix}_${ulid(now)}`;
}

export function hasPrefix(value: unknown, prefix: IdPrefix): value is string {
  return typeof value === 'string' && value.startsWith(`${prefix}_`) && value.length > prefix.length + 1;
}

/** Random base62 characters, for secrets and API keys. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // reject bytes >= 248 so every character is equally likely
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** Each character code's value in ENCODING (either case), -1 for a character outside it. */
const DECODING = (() => {
  const table = new Int8Array(128).fill(-1);
  for (let i = 0; i < ENCODING.length; i++) {
    table[ENCODING.charCodeAt(i)] = i;
    table[ENCODING.toLowerCase().charCodeAt(i)] = i;
  }
  return table;
})();
const HEX_CODES = Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
/** The characters of the UUID or ULID being written (one conversion at a time: nothing awaits in between). */
const UUID_CODES: number[] = new Array(36).fill(0);
const ENCODING_CODES = Array.from(ENCODING, (c) => c.charCodeAt(0));
const ULID_CODES: number[] = new Array(26).fill(0);
/** 26 characters whose first is at most 7: exactly 128 bits. */
const CANONICAL_ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A ULID is 128 bits, like a UUID: event stores that want UUID event ids get the same bits. Every
 * event id goes through here or back: a canonical id is converted with small integers, 4 bits in
 * and 5 out at a time (no BigInt per character); anything else as it always was.
 */
export function ulidToUuid(id: string): string {
  if (!CANONICAL_ULID.test(id)) return ulidToUuidByBigInt(id);
  // The first character holds the top 3 bits: 3 + 25 × 5 = 128, written as 32 hex digits and 4 dashes.
  const out = UUID_CODES;
  let acc = DECODING[id.charCodeAt(0)];
  let accBits = 3;
  let at = 0;
  for (let i = 1; i < 26; i++) {
    acc = (acc << 5) | DECODING[id.charCodeAt(i)];
    accBits += 5;
    while (accBits >= 4) {
      accBits -= 4;
      if (at === 8 || at === 13 || at === 18 || at === 23) out[at++] = 45; // '-'
      out[at++] = HEX_CODES[(acc >> accBits) & 15];
    }
    acc &= (1 << accBits) - 1;
  }
  return String.fromCharCode(...out);
}

export function uuidToUlid(uuid: string): string {
  if (!CANONICAL_UUID.test(uuid)) return uuidToUlidByBigInt(uuid);
  // Two zero bits above the 128: 2 + 128 = 26 × 5.
  const out = ULID_CODES;
  let acc = 0;
  let accBits = 2;
  let at = 0;
  for (let i = 0; i < 36; i++) {
    const code = uuid.charCodeAt(i);
    if (code === 45) continue; // '-'
    acc = (acc << 4) | (code <= 57 ? code - 48 : (code | 32) - 87);
    accBits += 4;
    if (accBits >= 5) {
      accBits -= 5;
      out[at++] = ENCODING_CODES[(acc >> accBits) & 31];
      acc &= (1 << accBits) - 1;
    }
  }
  return String.fromCharCode(...out);
}

/** The conversions for any other input, as they were first written: what the fast paths must equal. */
export function ulidToUuidByBigInt(id: string): string {
  let bits = 0n;
  for (const ch of id.toUpperCase()) {
    const v = ENCODING.indexOf(ch);
    if (v < 0) throw new Error(`not a ULID: ${id}`);
    bits = (bits << 5n) | BigInt(v);
  }
  const hex = bits.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function uuidToUlidByBigInt(uuid: string): string {
  let bits = BigInt('0x' + uuid.replace(/-/g, ''));
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = ENCODING[Number(bits & 31n)] + out;
    bits >>= 5n;
  }
  return out;
}

/** The public `evt_` id of a stored event, and back. */
export const publicEventId = (storedEventId: string): string => `evt_${uuidToUlid(storedEventId)}`;
export const storedEventId = (publicId: string): string => ulidToUuid(publicId.replace(/^evt_/, ''));
