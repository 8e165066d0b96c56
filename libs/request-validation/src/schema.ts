/**
 * A small schema language for request bodies: one definition validates a body (first error,
 * with the dotted `param` API.md asks for) and describes it as JSON Schema for OpenAPI.
 */
export type ValidationCode = 'parameter_missing' | 'parameter_invalid' | 'parameter_unknown' | 'event_unknown';

export interface ValidationError {
  code: ValidationCode;
  param: string;
  message: string;
}

/** A custom rule: null when the value is fine, else what is wrong (and optionally its code). */
export type Check<T> = (value: T) => null | string | { code: ValidationCode; message: string };

interface Common {
  description?: string;
  example?: unknown;
}
export interface StringSchema extends Common {
  kind: 'string';
  minLength?: number;
  maxLength?: number;
  enum?: readonly string[];
  /** Shown in JSON Schema; enforced by `check`. */
  format?: string;
  pattern?: RegExp;
  /** What the value should be, for error messages ("a three-letter ISO 4217 code"). */
  expected?: string;
  check?: Check<string>;
}
export interface IntegerSchema extends Common {
  kind: 'integer';
  minimum?: number;
  maximum?: number;
}
export interface BooleanSchema extends Common {
  kind: 'boolean';
}
export interface ArraySchema extends Common {
  kind: 'array';
  items: Schema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
}
export interface ObjectSchema extends Common {
  kind: 'object';
  properties: Record<string, Schema>;
  required: readonly string[];
  /** Rules across fields, run once every field is valid; return the error with its param. */
  refine?: (value: Record<string, unknown>, path: string) => ValidationError | null;
}
export type Schema = StringSchema | IntegerSchema | BooleanSchema | ArraySchema | ObjectSchema;

export const s = {
  string: (options: Omit<StringSchema, 'kind'> = {}): StringSchema => ({ kind: 'string', ...options }),
  integer: (options: Omit<IntegerSchema, 'kind'> = {}): IntegerSchema => ({ kind: 'integer', ...options }),
  boolean: (options: Omit<BooleanSchema, 'kind'> = {}): BooleanSchema => ({ kind: 'boolean', ...options }),
  array: (items: Schema, options: Omit<ArraySchema, 'kind' | 'items'> = {}): ArraySchema => ({ kind: 'array', items, ...options }),
  object: (properties: Record<string, Schema>, options: Omit<ObjectSchema, 'kind' | 'properties'> = { required: [] }): ObjectSchema => ({
    kind: 'object',
    properties,
    ...options,
  }),
};

const join = (path: string, key: string | number) => (path === '' ? String(key) : `${path}.${key}`);
const describeType = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`);
const invalid = (param: string, message: string): ValidationError => ({ code: 'parameter_invalid', param, message });

/** The first thing wrong with `value`, or null. `path` names the value in messages. */
export function validate(schema: Schema, value: unknown, path = ''): ValidationError | null {
  const name = path || 'the body';
  switch (schema.kind) {
    case 'string': {
      if (typeof value !== 'string') return invalid(path, `${name} must be a string, not ${describeType(value)}`);
      if (schema.enum && !schema.enum.includes(value)) return invalid(path, `${name} must be one of ${schema.enum.join(', ')}`);
      if (schema.minLength !== undefined && value.length < schema.minLength)
        return invalid(path, schema.minLength === 1 ? `${name} must not be empty` : `${name} must have at least ${schema.minLength} characters`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength) return invalid(path, `${name} must have at most ${schema.maxLength} characters`);
      if (schema.pattern && !schema.pattern.test(value)) return invalid(path, `${name} must be ${schema.expected ?? `of the form ${schema.pattern}`}`);
      return runCheck(schema.check, value, path, name);
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) return invalid(path, `${name} must be an integer (a safe JSON integer), not ${describeType(value)}`);
      if (schema.minimum !== undefined && value < schema.minimum) return invalid(path, `${name} must be at least ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) return invalid(path, `${name} must be at most ${schema.maximum}`);
      return null;
    }
    case 'boolean':
      return typeof value === 'boolean' ? null : invalid(path, `${name} must be true or false, not ${describeType(value)}`);
    case 'array': {
      if (!Array.isArray(value)) return invalid(path, `${name} must be an array, not ${describeType(value)}`);
      if (schema.minItems !== undefined && value.length < schema.minItems)
        return invalid(path, schema.minItems === 1 ? `${name} must not be empty` : `${name} must have at least ${schema.minItems} items`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) return invalid(path, `${name} must have at most ${schema.maxItems} items`);
      for (let i = 0; i < value.length; i++) {
        const error = validate(schema.items, value[i], join(path, i));
        if (error) return error;
      }
      if (schema.uniqueItems && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) return invalid(path, `${name} must not repeat an item`);
      return null;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return invalid(path, `${name} must be a JSON object, not ${describeType(value)}`);
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        if (!Object.prototype.hasOwnProperty.call(schema.properties, key)) {
          return { code: 'parameter_unknown', param: join(path, key), message: `${join(path, key)} is not a known parameter` };
        }
      }
      for (const [key, child] of Object.entries(schema.properties)) {
        const param = join(path, key);
        if (record[key] === undefined) {
          if (schema.required.includes(key)) return { code: 'parameter_missing', param, message: `${param} is required` };
          continue;
        }
        const error = validate(child, record[key], param);
        if (error) return error;
      }
      return schema.refine ? schema.refine(record, path) : null;
    }
  }
}

function runCheck(check: Check<string> | undefined, value: string, param: string, name: string): ValidationError | null {
  const outcome = check?.(value) ?? null;
  if (outcome === null) return null;
  if (typeof outcome === 'string') return invalid(param, `${name} ${outcome}`);
  return { code: outcome.code, param, message: outcome.message };
}

/** The same schema as JSON Schema (draft 2020-12, as OpenAPI 3.1 uses). */
export function toJsonSchema(schema: Schema): Record<string, unknown> {
  const common = { ...(schema.description && { description: schema.description }), ...(schema.example !== undefined && { examples: [schema.example] }) };
  switch (schema.kind) {
    case 'string':
      return {
        type: 'string',
        ...common,
        ...(schema.enum && { enum: [...schema.enum] }),
        ...(schema.minLength !== undefined && { minLength: schema.minLength }),
        ...(schema.maxLength !== undefined && { maxLength: schema.maxLength }),
        ...(schema.format && { format: schema.format }),
        ...(schema.pattern && { pattern: schema.pattern.source }),
      };
    case 'integer':
      return { type: 'integer', ...common, ...(schema.minimum !== undefined && { minimum: schema.minimum }), ...(schema.maximum !== undefined && { maximum: schema.maximum }) };
    case 'boolean':
      return { type: 'boolean', ...common };
    case 'array':
      return {
        type: 'array',
        ...common,
        items: toJsonSchema(schema.items),
        ...(schema.minItems !== undefined && { minItems: schema.minItems }),
        ...(schema.maxItems !== undefined && { maxItems: schema.maxItems }),
        ...(schema.uniqueItems && { uniqueItems: true }),
      };
    case 'object':
      return {
        type: 'object',
        ...common,
        properties: Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, toJsonSchema(v)])),
        ...(schema.required.length > 0 && { required: [...schema.required] }),
        additionalProperties: false,
      };
  }
}
