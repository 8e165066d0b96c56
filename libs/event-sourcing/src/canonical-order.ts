import { DomainEvent } from '@campaign-ops/decider';

/**
 * The event with its data's keys in canonical order (RFC 8785: sorted by UTF-16 code units), at
 * every depth. Applied to what a decider decides, before the event is used for anything: so the
 * in-memory event, the views folded from it and the stored text all have one key order, and the
 * stored JSON is its canonical form as it is, which an export then passes through unchanged (the
 * event store checks each text, exactly; an object whose keys JavaScript cannot keep in sorted
 * order, integer-like ones, only makes that event's export canonicalize it).
 */
export const inCanonicalOrder = <E extends DomainEvent>(event: E): E => ({ ...event, data: sortedKeys(event.data) });

/** A copy of a JSON value with the keys of every plain object sorted; anything else as it is. */
export function sortedKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortedKeys) as T;
  if (!isPlainObject(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of inOrder(Object.keys(value))) {
    const member = sortedKeys(value[key]);
    // A `__proto__` member (JSON.parse makes one) is defined, so it stays data instead of setting the
    // prototype. Only it: defining every member made each copy a slow dictionary-mode object.
    if (key === '__proto__') Object.defineProperty(sorted, key, { value: member, enumerable: true, writable: true, configurable: true });
    else sorted[key] = member;
  }
  return sorted as T;
}

/**
 * The keys sorted: in place, and only when they are not in order already. What a decider makes
 * mostly is (its literals are written sorted), and sort() copies its array to sort it even then.
 */
function inOrder(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return keys.sort();
  return keys;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
