/**
 * Requests generated from the served OpenAPI document, for the conformance property test: values
 * a JSON Schema (2020-12, the subset the document uses) accepts, and values it refuses, each
 * checked with ajv against that same schema before it is sent, so that the test judges the server
 * against the document and never against this generator's own idea of it.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';

export type Schema = Record<string, any>;
export type OpenApi = { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema>; parameters?: Record<string, Schema> } };

/** ajv over the document's components: `check(schema, value)` with $refs resolved against it. */
export function validatorOf(document: OpenApi): (schema: Schema, value: unknown) => boolean {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'doc', components: document.components }, 'doc');
  const compiled = new Map<string, (value: unknown) => boolean>();
  return (schema, value) => {
    const key = JSON.stringify(schema);
    let check = compiled.get(key);
    if (!check) {
      check = ajv.compile({ $id: `s${compiled.size}`, ...JSON.parse(key.replace(/"#\/components\//g, '"doc#/components/')) }) as (value: unknown) => boolean;
      compiled.set(key, check);
    }
    return check(value);
  };
}

const resolve = (document: OpenApi, schema: Schema): Schema => {
  let found = schema;
  for (let hops = 0; found.$ref && hops < 10; hops++) {
    const path = (found.$ref as string).replace(/^#\//, '').split('/');
    const { $ref: _ref, ...siblings } = found;
    found = { ...(path.reduce((node: any, part) => node[part], document) as Schema), ...siblings };
  }
  return found;
};

/** RFC 3339 date-times of every form `format: date-time` takes (offsets, no fraction, lower case); a pattern beside it narrows them (by the filter). */
const DATE_TIME = fc
  .tuple(
    fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }),
    fc.constantFrom('Z', 'no-fraction', '+01:00', 'lower'),
  )
  .map(([date, form]) => {
    const text = date.toISOString();
    if (form === 'no-fraction') return text.replace(/\.\d{3}Z$/, 'Z');
    if (form === '+01:00') return text.replace(/Z$/, '+01:00');
    if (form === 'lower') return text.replace('T', 't').replace('Z', 'z');
    return text;
  });

/** Values the schema accepts (filtered through ajv: what this cannot build exactly, it retries). */
export function validValue(document: OpenApi, check: (schema: Schema, value: unknown) => boolean, schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(document, schema);
  const build = (): fc.Arbitrary<unknown> => {
    if ('const' in s) return fc.constant(s.const);
    if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
    if (s.oneOf || s.anyOf) return fc.oneof(...((s.oneOf ?? s.anyOf) as Schema[]).map((option) => validValue(document, check, option, depth + 1)));
    const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
    switch (type) {
      case 'object': {
        const properties = (s.properties ?? {}) as Record<string, Schema>;
        const required = new Set((s.required ?? []) as string[]);
        // Deep optional objects only now and then: the document's nest at most three levels.
        const keys = Object.keys(properties).filter((key) => required.has(key) || depth < 4);
        return fc.record(Object.fromEntries(keys.map((key) => [key, validValue(document, check, properties[key], depth + 1)])), {
          requiredKeys: keys.filter((key) => required.has(key)),
        });
      }
      case 'array':
        return fc
          .array(validValue(document, check, s.items ?? {}, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) })
          .map((items) => (s.uniqueItems ? [...new Set(items)] : items));
      case 'integer':
        return fc.integer({ min: s.minimum ?? -1_000_000, max: s.maximum ?? 1_000_000_000_000 });
      case 'number':
        return fc.double({ min: s.minimum ?? -1e9, max: s.maximum ?? 1e9, noNaN: true });
      case 'boolean':
        return fc.boolean();
      case 'string': {
        if (s.format === 'date-time') return DATE_TIME;
        if (s.format === 'uri') return fc.webUrl({ validSchemes: ['https'] });
        if (s.pattern) return fc.stringMatching(new RegExp(s.pattern), { maxLength: s.maxLength ?? 64 });
        return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 40, 40), unit: 'grapheme-ascii' });
      }
      default:
        return fc.constant('x');
    }
  };
  return build().filter((value) => check(schema, value));
}

/**
 * Ways to make a valid value invalid, each confirmed invalid by ajv: a required property left
 * out, a property the schema does not know, a value of another type, a string outside its enum or
 * pattern, a number out of its range (anywhere in the tree). Answers the broken value and a word on how.
 */
export function brokenValue(
  document: OpenApi,
  check: (schema: Schema, value: unknown) => boolean,
  schema: Schema,
  valid: unknown,
): fc.Arbitrary<{ value: unknown; how: string }> {
  const edits: Array<{ path: string[]; how: string; apply(parent: any, key: string): void }> = [];
  const walk = (node: Schema, value: unknown, path: string[]) => {
    const s = resolve(document, node);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      if (path.length > 0) {
        edits.push({ path, how: 'another type', apply: (parent, key) => void (parent[key] = typeof value === 'string' ? 42 : 'not-this-type') });
        if (s.enum || s.pattern || s.format)
          edits.push({ path, how: 'outside its enum, pattern or format', apply: (parent, key) => void (parent[key] = '\u0000not-allowed') });
        if (typeof s.maximum === 'number') edits.push({ path, how: 'above its maximum', apply: (parent, key) => void (parent[key] = s.maximum + 1) });
        if (typeof s.minimum === 'number') edits.push({ path, how: 'below its minimum', apply: (parent, key) => void (parent[key] = s.minimum - 1) });
      }
      return;
    }
    const properties = (s.properties ?? {}) as Record<string, Schema>;
    for (const key of (s.required ?? []) as string[])
      edits.push({ path: [...path, key], how: `without ${[...path, key].join('.')}`, apply: (parent, k) => void delete parent[k] });
    edits.push({ path: [...path, 'unknown_field'], how: `with unknown ${[...path, 'unknown_field'].join('.')}`, apply: (parent, k) => void (parent[k] = 1) });
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) if (properties[key]) walk(properties[key], child, [...path, key]);
  };
  walk(schema, valid, []);
  const candidates = edits
    .map((edit) => {
      const value = structuredClone(valid) as any;
      const parent = edit.path.slice(0, -1).reduce((node, key) => node?.[key], value);
      if (parent === undefined || parent === null || typeof parent !== 'object') return null;
      edit.apply(parent, edit.path[edit.path.length - 1]);
      return check(schema, value) ? null : { value, how: `${edit.how} (${edit.path.join('.') || 'body'})` };
    })
    .filter((candidate): candidate is { value: unknown; how: string } => candidate !== null);
  return candidates.length > 0 ? fc.constantFrom(...candidates) : fc.constant({ value: 'not an object', how: 'a string for the body' });
}
