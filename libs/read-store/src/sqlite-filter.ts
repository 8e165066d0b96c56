// Filters of the SQLite read store compiled to SQL (json_extract on the doc column, type-guarded
// like MongoDB), and the field-name check that keeps inlining names into SQL safe.
import type { Filter, Scalar } from './read-store.port';

/** Field names are inlined into SQL (see below), so this pattern is what keeps that safe. */
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// Values are always bound parameters. Field names are inlined as JSON path literals instead,
// because SQLite uses an expression index only when the query contains the very same expression
// (`json_extract(doc, '$.status')`), never a `json_extract(doc, ?)`; FIELD_NAME makes that safe.
//
// json_extract returns SQL values: JSON strings as TEXT, numbers as INTEGER/REAL, true/false as
// 1/0, and null or a missing field as NULL. So comparisons alone would let `true` match `1` and,
// since SQLite orders every number below every text, `{ $lt: 'b' }` match all numbers. Each
// comparison is therefore paired with a `json_type` guard on the kind of the filter value: like
// MongoDB, a filter only matches values of its own type (numbers of any kind compare together).

export type CompiledFilter = { sql: string; params: unknown[] };
type Comparison = '=' | '<' | '<=' | '>' | '>=';
type Kind = 'string' | 'number' | 'boolean';

// A Map, not an object literal: `'constructor' in {...}` would be true.
const RANGE_OPERATORS = new Map<string, Comparison>([
  ['$lt', '<'],
  ['$lte', '<='],
  ['$gt', '>'],
  ['$gte', '>='],
]);
const TYPE_GUARDS: Record<Kind, string> = {
  string: "= 'text'",
  number: "IN ('integer', 'real')",
  boolean: "IN ('true', 'false')",
};
const NEVER = '0';

export function compileFilter(where: Filter): CompiledFilter {
  const conditions: string[] = [];
  const params: unknown[] = [];
  for (const [field, condition] of Object.entries(where)) {
    // An undefined value is no condition, as with `patch`: optional filters pass through as they are.
    if (condition === undefined) continue;
    assertFieldName(field);
    if (isScalar(condition)) {
      conditions.push(compare(field, '=', condition, params));
      continue;
    }
    if (typeof condition !== 'object' || Array.isArray(condition)) throw new TypeError(`invalid filter on ${field}`);
    for (const [operator, operand] of Object.entries(condition)) {
      if (operand === undefined) continue;
      if (operator === '$in') {
        if (!Array.isArray(operand)) throw new TypeError(`$in on ${field} needs an array`);
        conditions.push(compileIn(field, operand, params));
      } else if (RANGE_OPERATORS.has(operator)) {
        if (!isScalar(operand)) throw new TypeError(`${operator} on ${field} needs a scalar`);
        conditions.push(compare(field, RANGE_OPERATORS.get(operator)!, operand, params));
      } else {
        throw new TypeError(`unsupported filter operator ${operator} on ${field}`);
      }
    }
  }
  return { sql: conditions.length ? conditions.join(' AND ') : '1', params };
}

function compare(field: string, comparison: Comparison, value: Scalar, params: unknown[]): string {
  if (value === null) {
    // null equals null or a missing field, and nothing is ordered strictly before or after it.
    return comparison === '=' || comparison === '<=' || comparison === '>=' ? `${fieldValue(field)} IS NULL` : NEVER;
  }
  const kind = kindOf(value);
  if (field === 'id') {
    // The id column is always text; no guard needed, and other kinds never match it.
    if (kind !== 'string') return NEVER;
    params.push(value);
    return `id ${comparison} ?`;
  }
  params.push(toSql(value));
  return `(${fieldValue(field)} ${comparison} ? AND ${fieldType(field)} ${TYPE_GUARDS[kind]})`;
}

/** One `IN (json_each(?))` per kind present, so the SQL has a fixed shape whatever the list length. */
function compileIn(field: string, values: unknown[], params: unknown[]): string {
  const byKind = new Map<Kind, unknown[]>();
  let matchesNull = false;
  for (const value of values) {
    if (!isScalar(value)) throw new TypeError(`$in on ${field} accepts scalars only`);
    if (value === null) {
      matchesNull = true;
      continue;
    }
    const kind = kindOf(value);
    byKind.set(kind, [...(byKind.get(kind) ?? []), toSql(value)]);
  }
  const alternatives: string[] = [];
  if (matchesNull) alternatives.push(`${fieldValue(field)} IS NULL`);
  for (const [kind, list] of byKind) {
    if (field === 'id' && kind !== 'string') continue;
    params.push(JSON.stringify(list));
    const membership = `${fieldValue(field)} IN (SELECT value FROM json_each(?))`;
    alternatives.push(field === 'id' ? membership : `(${membership} AND ${fieldType(field)} ${TYPE_GUARDS[kind]})`);
  }
  return alternatives.length ? `(${alternatives.join(' OR ')})` : NEVER;
}

export function fieldValue(field: string): string {
  return field === 'id' ? 'id' : `json_extract(doc, '$.${field}')`;
}

function fieldType(field: string): string {
  return `json_type(doc, '$.${field}')`;
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function kindOf(value: string | number | boolean): Kind {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`cannot filter on ${value}: JSON has no such number`);
  return typeof value as Kind;
}

/** Booleans as json_extract returns them; the type guard tells them apart from the numbers 1 and 0. */
function toSql(value: string | number | boolean): string | number {
  return typeof value === 'boolean' ? Number(value) : value;
}

export function assertFieldName(field: string): void {
  if (!FIELD_NAME.test(field)) throw new Error(`invalid field name: ${JSON.stringify(field)}`);
}
