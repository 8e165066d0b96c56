/**
 * EventStoreDB positions as the port's opaque position strings.
 *
 * An EventStoreDB position in `$all` is a pair of unsigned 64-bit integers, ordered by commit
 * position first, then by prepare position. The port wants a single string that consumers may
 * compare as a non-negative decimal integer (see the contract suite), so the pair is packed into
 * one 128-bit integer, `(commit << 64) | prepare`, written in decimal: integer order is then
 * exactly EventStoreDB's order, and the pair can be recovered for `fromPosition`.
 */

export interface EsdbPosition {
  commit: bigint;
  prepare: bigint;
}

const U64_MAX = (1n << 64n) - 1n;
const ENCODED_MAX = (U64_MAX << 64n) | U64_MAX;
/** Canonical decimal: no sign, no leading zeros, so that one position has exactly one spelling. */
const CANONICAL_DECIMAL = /^(0|[1-9][0-9]*)$/;

export function encodePosition(position: EsdbPosition): string {
  const { commit, prepare } = position;
  if (!isU64(commit) || !isU64(prepare)) {
    throw new RangeError(`not an EventStoreDB position: commit ${String(commit)}, prepare ${String(prepare)}`);
  }
  return ((commit << 64n) | prepare).toString(10);
}

export function decodePosition(position: string): EsdbPosition {
  if (typeof position !== 'string' || !CANONICAL_DECIMAL.test(position)) {
    throw new Error(`not an event store position: ${String(position)}`);
  }
  const value = BigInt(position);
  if (value > ENCODED_MAX) throw new Error(`not an event store position: ${position} is out of range`);
  return { commit: value >> 64n, prepare: value & U64_MAX };
}

/** Orders two encoded positions (negative, zero or positive, like a sort comparator). */
export function comparePositions(a: string, b: string): number {
  const difference = BigInt(a) - BigInt(b);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

/**
 * EventStoreDB reports "no position" as the all-ones pair (what -1 becomes unsigned), e.g. for a
 * stream read on servers older than 22.6 or for events written in explicit transactions.
 */
export function isUnknownPosition(position: EsdbPosition | undefined): boolean {
  return position === undefined || position.commit === U64_MAX || position.prepare === U64_MAX;
}

function isU64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= 0n && value <= U64_MAX;
}
