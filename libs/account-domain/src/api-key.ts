import { createHash } from 'node:crypto';
import { randomBase62 } from '@campaign-ops/ids';
import { Mode } from './mode';

const PREFIX: Record<Mode, string> = { live: 'mk_live_', test: 'mk_test_' };
const SECRET_LENGTH = 40;
const KEY_PATTERN = /^mk_(live|test)_[0-9A-Za-z]{32,128}$/;

/** A new key: shown to its owner once; only its hash is kept. */
export function generateApiKey(mode: Mode): { key: string; hash: string } {
  const key = PREFIX[mode] + randomBase62(SECRET_LENGTH);
  return { key, hash: hashApiKey(key) };
}

/** Keys carry 238 bits of randomness, so a plain SHA-256 cannot be reversed or brute-forced. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

export const looksLikeApiKey = (value: string): boolean => KEY_PATTERN.test(value);
