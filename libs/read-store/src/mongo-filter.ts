import type { Document } from 'mongodb';
import type { Filter, Scalar } from './read-store.port';

/**
 * Translation of the port's `Filter` into a MongoDB query document, with the semantics of the
 * embedded (SQLite) adapter, which are the reference:
 *
 * - A filter only matches values of its own type: `{ n: 3 }` matches the number 3, never `'3'`,
 *   `true` never matches `1`, a number range skips strings. MongoDB's comparison operators do this
 *   by themselves (type bracketing); numbers of every BSON kind compare together, as in SQLite.
 * - Arrays: MongoDB would match `{ tag: 'x' }` against `tag: ['x', 'y']` (any element), SQLite
 *   sees an array as a value of its own kind that no scalar filter matches. Every condition on a
 *   document field therefore also says `$not: { $type: 'array' }`. The guard is not indexable; it
 *   is a residual check on documents that the indexable part (`$eq`, ranges, `$in`) selected.
 * - `null` equality matches null and missing fields (MongoDB's `$eq: null`); `$lte: null` and
 *   `$gte: null` behave like it; `$lt: null` and `$gt: null` match nothing.
 * - `$in: []` matches nothing; `$in` with null also matches missing fields.
 * - `undefined`, as a field's condition or as an operator's operand, is no condition (so optional
 *   filters can be passed through as they are); a condition object without operators likewise.
 * - The port's `id` is the stored `_id`. Ids are strings, so a non-string (or null) condition on
 *   `id` matches nothing.
 *
 * A filter that can match nothing at all becomes `{ _id: { $in: [] } }` as a whole, after every
 * field has been validated (an invalid field is reported even beside an impossible condition).
 */

/** Top-level field in which a document's revision is stored; never part of a returned document. */
export const REVISION_FIELD = '_rev';

/** Field names the adapter uses itself: documents, patches, filters and indexes may not use them. */
const RESERVED_FIELDS = new Set(['_id', REVISION_FIELD]);

/** Same rule as the SQLite adapter: plain identifiers, so no dots (paths) and no `$` (operators). */
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Range = '$lt' | '$lte' | '$gt' | '$gte';
// A Set, not an object literal: `'constructor' in {...}` would be true.
const RANGE_OPERATORS = new Set<string>(['$lt', '$lte', '$gt', '$gte']);

const NEVER = Symbol('never');
type Translated = Document | string | typeof NEVER | undefined;

export function assertFieldName(field: string): void {
  if (typeof field !== 'string' || !FIELD_NAME.test(field)) throw new Error(`invalid field name: ${JSON.stringify(field)}`);
  if (RESERVED_FIELDS.has(field)) throw new Error(`reserved field name: ${JSON.stringify(field)}`);
}

export function isReservedField(field: string): boolean {
  return RESERVED_FIELDS.has(field);
}

/** The stored name of a port field: `id` is the `_id`, every other field keeps its name. */
export function storedField(field: string): string {
  return field === 'id' ? '_id' : field;
}

/** A query that matches no document (and is answered from the `_id` index without reading any). */
export function matchNothing(): Document {
  return { _id: { $in: [] } };
}

export function toMongoFilter(where: Filter): Document {
  if (typeof where !== 'object' || where === null || Array.isArray(where)) throw new TypeError('a filter must be an object');
  const filter: Document = {};
  let never = false;
  for (const [field, condition] of Object.entries(where)) {
    // An undefined value is no condition, as with `patch`: optional filters pass through as they are.
    if (condition === undefined) continue;
    assertFieldName(field);
    const translated = field === 'id' ? translateId(condition) : translateField(field, condition);
    if (translated === NEVER) never = true;
    else if (translated !== undefined) filter[storedField(field)] = translated;
  }
  return never ? matchNothing() : filter;
}

function translateField(field: string, condition: unknown): Translated {
  if (isScalar(condition)) return { $eq: checked(condition), $not: notArray() };
  const operators = operatorsOf(field, condition);
  const query: Document = {};
  let never = false;
  for (const [operator, operand] of operators) {
    if (operator === '$in') {
      const values = operand as Scalar[];
      if (values.length === 0) never = true;
      else query.$in = [...values];
    } else if (operand === null) {
      // Nothing is ordered strictly before or after null; `<=`/`>=` null is equality with it.
      if (operator === '$lt' || operator === '$gt') never = true;
      else query.$eq = null;
    } else {
      query[operator] = operand;
    }
  }
  if (never) return NEVER;
  if (Object.keys(query).length === 0) return undefined;
  query.$not = notArray();
  return query;
}

/** `_id` is always a string: conditions of other kinds (null included) match nothing. */
function translateId(condition: unknown): Translated {
  if (isScalar(condition)) return typeof checked(condition) === 'string' ? (condition as string) : NEVER;
  const operators = operatorsOf('id', condition);
  const query: Document = {};
  let never = false;
  for (const [operator, operand] of operators) {
    if (operator === '$in') {
      const ids = (operand as Scalar[]).filter((value): value is string => typeof value === 'string');
      if (ids.length === 0) never = true;
      else query.$in = ids;
    } else if (typeof operand === 'string') {
      query[operator] = operand;
    } else {
      never = true;
    }
  }
  if (never) return NEVER;
  return Object.keys(query).length === 0 ? undefined : query;
}

/** Validates a condition object and returns its defined operators with checked operands. */
function operatorsOf(field: string, condition: unknown): [Range | '$in', Scalar | Scalar[]][] {
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) throw new TypeError(`invalid filter on ${field}`);
  const operators: [Range | '$in', Scalar | Scalar[]][] = [];
  for (const [operator, operand] of Object.entries(condition)) {
    if (operand === undefined) continue;
    if (operator === '$in') {
      if (!Array.isArray(operand)) throw new TypeError(`$in on ${field} needs an array`);
      for (const value of operand) {
        if (!isScalar(value)) throw new TypeError(`$in on ${field} accepts scalars only`);
        checked(value);
      }
      operators.push(['$in', operand as Scalar[]]);
    } else if (RANGE_OPERATORS.has(operator)) {
      if (!isScalar(operand)) throw new TypeError(`${operator} on ${field} needs a scalar`);
      operators.push([operator as Range, checked(operand)]);
    } else {
      throw new TypeError(`unsupported filter operator ${operator} on ${field}`);
    }
  }
  return operators;
}

function notArray(): Document {
  return { $type: 'array' };
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** Documents are JSON: NaN and the infinities cannot be stored, so filtering on them is an error (as in SQLite). */
function checked<V extends Scalar>(value: V): V {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`cannot filter on ${value}: JSON has no such number`);
  return value;
}
