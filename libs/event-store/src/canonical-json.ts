/**
 * Whether JSON.stringify(value) is already its RFC 8785 canonical form, as the `canonicalize`
 * package writes it, without making that form: true only for plain objects whose keys JavaScript
 * lists in sorted order (UTF-16 code units), arrays, strings, finite numbers, booleans and null, at
 * every depth, with no undefined, function or symbol anywhere. For those both serialize every
 * primitive with JSON.stringify and list the same members in the same order; anything else answers
 * false, which costs only speed (the export canonicalizes that event itself). A property spec
 * holds it to the package.
 */
export function stringifiesCanonically(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (Array.isArray(value)) return value.every(stringifiesCanonically);
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && !(keys[i - 1] < keys[i])) return false;
    if (!stringifiesCanonically((value as Record<string, unknown>)[keys[i]])) return false;
  }
  return true;
}
