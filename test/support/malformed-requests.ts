/**
 * Malformed requests for the property-based fuzz of the API (test/e2e/malformed-requests.fuzz.e2e.spec.ts):
 * the shape a route's body has, fast-check arbitraries that break a valid body or request the ways
 * careless and hostile clients do, and a raw HTTP call that sends exactly what it is given (any path
 * bytes, repeated or odd headers, body text that JSON.stringify cannot write, chunked or not).
 *
 * A generated request is a small recipe, not its bytes: a counterexample prints as
 * `{repeat: "é", times: 70000}`, not as 70,000 characters. `renderRequest` makes the bytes.
 */
import fc from 'fast-check';
import { Agent, request as httpRequest } from 'node:http';

// ---------------------------------------------------------------------------------------------
// What a body may hold, per route (a reading of libs/api-contract's DTOs, kept independent of them)

export type FieldKind = 'string' | 'integer' | 'boolean' | 'array' | 'object';
export interface FieldShape {
  kind: FieldKind;
  required?: boolean;
  /** For strings: the longest value a valid body may hold (docs/api.md or the DTO). */
  maxLength?: number;
  /** For objects: their fields. */
  fields?: BodyShape;
  /** For arrays: what an item is. */
  items?: FieldShape;
}
export type BodyShape = Record<string, FieldShape>;

/** A field's place in the body, with its shape; `0` stands for an array's first item. */
export interface FieldAt {
  path: string[];
  shape: FieldShape;
}

export function fieldsOf(shape: BodyShape, prefix: string[] = []): FieldAt[] {
  return Object.entries(shape).flatMap(([name, field]) => {
    const path = [...prefix, name];
    const inner =
      field.kind === 'object' && field.fields
        ? fieldsOf(field.fields, path)
        : field.kind === 'array' && field.items
          ? [{ path: [...path, '0'], shape: field.items }]
          : [];
    return [{ path, shape: field }, ...inner];
  });
}

/** Names every JavaScript object answers to without owning them (docs/api.md#errors: unknown fields like any other). */
export const PROTOTYPE_NAMES = [...Object.getOwnPropertyNames(Object.prototype), '__proto__', 'prototype'];

// ---------------------------------------------------------------------------------------------
// Recipes

/** A JSON value to put somewhere, as a recipe: plain JSON, raw JSON text, deep nesting, or a huge string. */
export type ValueRecipe = { json: unknown } | { raw: string } | { nested: 'object' | 'array'; depth: number; key: string } | { repeat: string; times: number };

/** An edit of the valid body; `refused`: this edit alone makes any body refused (an unknown field, a wrong type…). */
export type BodyEdit = ({ set: string[]; to: ValueRecipe } | { remove: string[] }) & { what: string; refused: boolean };

export type BodyRecipe =
  | { edits: BodyEdit[] } // the route's valid body, changed
  | { value: ValueRecipe; what: string } // a whole body that is not an object
  | { text: string; what: string } // text that is not JSON
  | { none: true }; // no body at all

/** A header value or path part, long ones as a recipe (`{repeat: 'k', times: 2000}`) so counterexamples stay readable. */
export type Text = string | { repeat: string; times: number };
export const textOf = (text: Text): string => (typeof text === 'string' ? text : text.repeat.repeat(text.times));

export interface RequestRecipe {
  body: BodyRecipe;
  /** The Content-Type sent with a body: the default `application/json`, another type, or none (null). */
  contentType?: string | null;
  /** Replaces the route's `:id` (already percent-encoded where it needs to be). */
  pathId?: Text;
  query?: Text;
  authorization?: string | null;
  idempotencyKey?: Text | string[];
  requestId?: Text;
  otherHeaders?: Array<[string, string]>;
  /** Sent with Transfer-Encoding: chunked in small pieces, without Content-Length. */
  chunked?: boolean;
}

/** Whether the edits certainly leave the body refused: one refuses it, and none touches another's place (so none undoes another). */
export function editsRefuse(edits: BodyEdit[]): boolean {
  const pathOf = (edit: BodyEdit) => ('set' in edit ? edit.set : edit.remove);
  const within = (inner: string[], outer: string[]) => outer.length <= inner.length && outer.every((step, i) => inner[i] === step);
  const apart = edits.every((a, i) => edits.every((b, j) => i === j || (!within(pathOf(a), pathOf(b)) && !within(pathOf(b), pathOf(a)))));
  return apart && edits.some((edit) => edit.refused);
}

/** Written by `renderValue` as-is: JSON text that no JS value stringifies to (1e400, -0, 8,000 levels). */
class RawJson {
  constructor(readonly text: string) {}
}

export function renderValue(recipe: ValueRecipe): RawJson {
  if ('json' in recipe) return new RawJson(jsonText(recipe.json));
  if ('raw' in recipe) return new RawJson(recipe.raw);
  if ('nested' in recipe) {
    const [open, close] = recipe.nested === 'object' ? [`{${JSON.stringify(recipe.key)}:`, '}'] : ['[', ']'];
    return new RawJson(`${open.repeat(recipe.depth)}${recipe.nested === 'object' ? '"x"' : ''}${close.repeat(recipe.depth)}`);
  }
  return new RawJson(JSON.stringify(recipe.repeat.repeat(recipe.times)));
}

/** JSON text of a value that may hold RawJson (walked: the values here are a few levels deep at most). */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${jsonText((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Sets an own property, even one named `__proto__` (plain assignment would set the prototype). */
function own(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The body's text: the valid body with the edits applied (an edit whose parent is no longer an object is skipped). */
export function renderBody(valid: Record<string, unknown> | undefined, recipe: BodyRecipe): string | undefined {
  if ('none' in recipe) return undefined;
  if ('text' in recipe) return recipe.text;
  if ('value' in recipe) return jsonText(renderValue(recipe.value));
  const body = structuredClone(valid ?? {});
  for (const edit of recipe.edits) {
    const path = 'set' in edit ? edit.set : edit.remove;
    let parent: unknown = body;
    for (const step of path.slice(0, -1)) {
      if (parent === null || typeof parent !== 'object') break;
      const record = parent as Record<string, unknown>;
      if (!Object.prototype.hasOwnProperty.call(record, step) || record[step] === null || typeof record[step] !== 'object') own(record, step, {});
      parent = record[step];
    }
    if (parent === null || typeof parent !== 'object' || parent instanceof RawJson) continue;
    const last = path[path.length - 1];
    if ('set' in edit) own(parent as Record<string, unknown>, last, renderValue(edit.to));
    else delete (parent as Record<string, unknown>)[last];
  }
  return jsonText(body);
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

const smallJson = fc.jsonValue({ maxDepth: 2 });
const otherKinds: Record<FieldKind | 'null' | 'float', fc.Arbitrary<unknown>> = {
  string: fc.string({ maxLength: 24 }),
  integer: fc.integer(),
  float: fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
  boolean: fc.boolean(),
  null: fc.constant(null),
  array: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  object: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
};

/** A value of any JSON type but the field's own (an integer is not a float's kind, so 1.5 counts for integers). */
function wrongType(kind: FieldKind): fc.Arbitrary<ValueRecipe> {
  const kinds = (Object.keys(otherKinds) as Array<keyof typeof otherKinds>).filter((other) => other !== kind);
  return fc.oneof(...kinds.map((other) => otherKinds[other])).map((json) => ({ json }));
}

/** The number-like texts JSON does or does not allow (NaN, 1e400, -0…), and, for integers, numbers as strings. */
const NUMBER_TEXTS = ['NaN', 'Infinity', '-Infinity', '1e400', '-1e400', '1e-400', '-0', '0', '-1', '1.5', '1.0000000000000002', '9007199254740993', '1E2'];
const NUMBERS_AS_STRINGS = ['"NaN"', '"Infinity"', '"-0"', '"1e3"', '" 5"', '"0x10"', '"5"'];
const numberLike = (kind: FieldKind): fc.Arbitrary<ValueRecipe> =>
  kind === 'integer'
    ? fc.oneof(
        fc.constantFrom(...NUMBER_TEXTS, ...NUMBERS_AS_STRINGS).map((raw) => ({ raw })),
        fc.integer().map((n) => ({ json: String(n) })),
      )
    : fc.constantFrom(...NUMBER_TEXTS).map((raw) => ({ raw }));

/** A name no field of the route has: the prototype's members first of all, then anything. */
function unknownName(known: Set<string>): fc.Arbitrary<string> {
  const names = [
    { weight: 2, arbitrary: fc.constantFrom(...PROTOTYPE_NAMES) },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 16 }).filter((name) => !known.has(name)) },
  ];
  // A known name in another case or with a space is another name.
  if (known.size > 0)
    names.push({ weight: 1, arbitrary: fc.constantFrom(...known).chain((name) => fc.constantFrom(name.toUpperCase(), `${name} `, ` ${name}`)) });
  return fc.oneof(...names);
}

const deepNesting = fc.record({
  nested: fc.constantFrom<'object' | 'array'>('object', 'array'),
  depth: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 500, max: 10_000 })),
  key: fc.oneof(fc.constant('a'), fc.constantFrom('__proto__', 'constructor', 'valueOf')),
});

/** Longer than the field may be: up to 80,000 characters (past the 64 KiB body limit). Characters, not UTF-16 units: 😀 is one (docs/api.md's lengths count characters). */
const hugeString = (maxLength: number): fc.Arbitrary<ValueRecipe> =>
  fc
    .record({
      repeat: fc.string({ minLength: 1, maxLength: 3, unit: fc.constantFrom('x', 'é', '€', '😀', '"', '\\', '\u0000', '<') }),
      length: fc.integer({ min: maxLength + 1, max: 80_000 }),
    })
    .map(({ repeat, length }) => ({ repeat, times: Math.ceil(length / [...repeat].length) }));

/** One way to break the valid body of a route of this shape. */
export function bodyEdit(shape: BodyShape, valid: Record<string, unknown> | undefined): fc.Arbitrary<BodyEdit> {
  const fields = fieldsOf(shape);
  const known = new Set(fields.map((field) => field.path[field.path.length - 1]).filter((name) => name !== '0'));
  const objects: string[][] = [[], ...fields.filter((field) => field.shape.kind === 'object').map((field) => field.path)];
  // Required where its object is present (not an array's item: an array without it may be fine).
  const presentRequired = fields.filter(
    (field) => field.shape.required && field.path[field.path.length - 1] !== '0' && valueAt(valid, field.path) !== undefined,
  );
  const edits: Array<fc.Arbitrary<BodyEdit>> = [
    // An unknown field, at the top or inside any object of the body.
    fc
      .tuple(fc.constantFrom(...objects), unknownName(known), smallJson)
      .map(([at, name, json]) => ({ set: [...at, name], to: { json }, what: `unknown field ${[...at, name].join('.')}`, refused: true })),
  ];
  if (fields.length > 0) {
    const field = fc.constantFrom(...fields);
    const at = (f: FieldAt) => f.path.join('.');
    edits.push(
      field.chain((f) => wrongType(f.shape.kind).map((to) => ({ set: f.path, to, what: `wrong type at ${at(f)}`, refused: true }))),
      // `[]` may be a fine array; anything deeper, or an object, is not.
      field.chain((f) =>
        deepNesting.map((to) => ({
          set: f.path,
          to,
          what: `deep nesting at ${at(f)}`,
          refused: !(to.nested === 'array' && to.depth === 1 && f.shape.kind === 'array'),
        })),
      ),
      field.chain((f) => hugeString(f.shape.maxLength ?? 256).map((to) => ({ set: f.path, to, what: `huge string at ${at(f)}`, refused: true }))),
      // 0, -0 and 1E2 are integers (a valid amount for some fields).
      field.chain((f) => numberLike(f.shape.kind).map((to) => ({ set: f.path, to, what: `number-like at ${at(f)}`, refused: f.shape.kind !== 'integer' }))),
      field.map((f) => ({ set: f.path, to: { json: null }, what: `null at ${at(f)}`, refused: true })),
      field.chain((f) => smallJson.map((json) => ({ set: f.path, to: { json }, what: `any JSON at ${at(f)}`, refused: false }))),
    );
  }
  const objectFields = fields.filter((field) => field.shape.kind === 'object');
  if (objectFields.length > 0) {
    edits.push(
      fc
        .constantFrom(...objectFields)
        .chain((f) =>
          fc
            .constantFrom<ValueRecipe>({ json: [] }, { json: [valueAt(valid, f.path) ?? {}] })
            .map((to) => ({ set: f.path, to, what: `array for the object ${f.path.join('.')}`, refused: true })),
        ),
    );
  }
  if (presentRequired.length > 0)
    edits.push(fc.constantFrom(...presentRequired).map((f) => ({ remove: f.path, what: `missing ${f.path.join('.')}`, refused: true })));
  return fc.oneof(...edits);
}

function valueAt(body: unknown, path: string[]): unknown {
  return path.reduce<unknown>((value, step) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[step] : undefined), body);
}

const INVALID_JSON_TEXTS = [
  "{'channel':'meta_ads'}",
  '{"a":1,}',
  '{"a":NaN}',
  '{"a":undefined}',
  '{"a":1}}',
  '{"a":1} // comment',
  '/* comment */ {}',
  '\uFEFF{}',
  '{"a":"\\x41"}',
  '{"a":"unterminated}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a":0x10}',
  '{"a":1e}',
  '{"a":"\u0001"}',
  '{"a" 1}',
  '[',
  '{',
  '}',
  ' ',
  '\n',
  'tru',
  'nul',
  '{"__proto__":',
];

const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** A whole body that is not the route's: not JSON, not an object, empty, or a valid one cut short. */
export function wholeBody(valid: Record<string, unknown> | undefined): fc.Arbitrary<BodyRecipe> {
  const validText = valid === undefined ? '{"a":1}' : JSON.stringify(valid);
  return fc.oneof(
    fc.constantFrom(...INVALID_JSON_TEXTS).map((text) => ({ text, what: 'invalid JSON' })),
    fc.integer({ min: 1, max: validText.length - 1 }).map((cut) => ({ text: validText.slice(0, cut), what: 'a valid body cut short' })),
    fc
      .string({ minLength: 1, maxLength: 40 })
      .filter((text) => !parses(text))
      .map((text) => ({ text, what: 'random text' })),
    fc
      .oneof(otherKinds.array, otherKinds.string, otherKinds.integer, otherKinds.boolean, otherKinds.null)
      .map((json) => ({ value: { json }, what: 'a body that is not an object' })),
    fc.constant({ value: { json: [valid ?? {}] }, what: 'the valid body inside an array' }),
    deepNesting.map((value) => ({ value, what: 'a body nested deep' })),
  );
}

const ODD_CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/jsonx',
  'application/vnd.api+json',
  'text/json',
  '*/*',
  '',
  'application/json, text/plain',
  'application/json;;',
  'APPLICATION/JSON',
  'application/json; charset="utf-8"',
];
export const contentType: fc.Arbitrary<string | null> = fc.oneof(fc.constantFrom(...ODD_CONTENT_TYPES), fc.constant(null));

/** Types that are not `application/json` at all (docs/api.md#errors: 415), or none: a body sent with them is refused whatever it holds. */
const NOT_JSON = new Set([
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/vnd.api+json',
  'text/json',
  '*/*',
  '',
]);
export const contentTypeRefuses = (type: string | null | undefined): boolean => type === null || (type !== undefined && NOT_JSON.has(type));

/** Odd query strings (with or without their `?`): repeated names, prototype names, names no route takes, bad percent-encoding, very long. */
export const query: fc.Arbitrary<Text> = fc.oneof<fc.Arbitrary<Text>[]>(
  fc.constantFrom(
    '?a=1&a=2',
    '?__proto__=1',
    '?constructor=x',
    '?prototype=1',
    '?toString=1&toString=2',
    '?limit=0&limit=1',
    '?%E0%A4%A=1',
    '?x',
    '?=',
    '?&&&',
    '?a[b]=1',
    '?a%00=b',
  ),
  fc.integer({ min: 1000, max: 20_000 }).map((times) => ({ repeat: 'q&', times })), // past the 16 KiB Node reads of a request's head
  fc
    .array(fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })), { minLength: 1, maxLength: 4 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`),
);

/** Header values Node's client lets through (no control characters; Latin-1 allowed). */
const headerText = (min: number, max: number) =>
  fc.string({
    minLength: min,
    maxLength: max,
    unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((code) => String.fromCharCode(code)),
  });

export const idempotencyKey: fc.Arbitrary<Text | string[]> = fc.oneof<fc.Arbitrary<Text | string[]>[]>(
  fc.uuid().map((id) => `fuzz-${id}`), // well-formed, new
  fc.integer({ min: 256, max: 2000 }).map((times) => ({ repeat: 'k', times })), // too long
  fc.constantFrom('', ' ', 'two words', 'clé', 'tab\tinside'),
  headerText(1, 40),
  fc.tuple(fc.uuid(), fc.uuid()).map(([a, b]) => [`fuzz-${a}`, `fuzz-${b}`]), // sent twice
);

export const requestId: fc.Arbitrary<Text> = fc.oneof<fc.Arbitrary<Text>[]>(
  fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
  fc.integer({ min: 65, max: 300 }).map((times) => ({ repeat: 'r', times })),
  headerText(1, 40),
);

export const otherHeaders: fc.Arbitrary<Array<[string, string]>> = fc.array(
  fc.oneof(
    fc.constantFrom<[string, string]>(
      ['Accept', 'text/html'],
      ['Accept', '*/*;q=0'],
      ['X-HTTP-Method-Override', 'DELETE'],
      ['X-Forwarded-For', '10.0.0.1, ::1'],
      ['Origin', 'null'],
      ['Expect', '100-continue'],
    ),
    fc.tuple(fc.stringMatching(/^X-[A-Za-z0-9-]{1,20}$/), headerText(0, 60)),
  ),
  { maxLength: 3 },
);

/** Path ids that are not the route's resource: prototype names, other prefixes, encoded slashes, very long, undecodable. */
export const badPathId = (othersIds: string[]): fc.Arbitrary<Text> =>
  fc.oneof<fc.Arbitrary<Text>[]>(
    fc.constantFrom(...PROTOTYPE_NAMES),
    fc.constantFrom('%00', '%E0%A4%A', '..%2F..%2Fadmin', '%2e%2e', 'null', 'undefined', '0', '-1', 'whk_', 'acct_', 'con_01', 'dsp_%20', ...othersIds),
    fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent),
    fc.integer({ min: 200, max: 20_000 }).map((times) => ({ repeat: 'i', times })),
  );

// ---------------------------------------------------------------------------------------------
// Sending

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** Closes the kept-alive sockets (at the end of a test file). */
export const closeRawConnections = () => agent.destroy();

/** Sends exactly this request over loopback and reads the whole answer (10 s at most). */
export function sendRaw(
  baseUrl: string,
  method: string,
  path: string,
  headers: Array<[string, string | string[]]>,
  body: string | undefined,
  chunked = false,
): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const bytes = body === undefined ? undefined : Buffer.from(body, 'utf8');
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: hostname, port: Number(port), method, path, agent, timeout: 10_000, setHost: true }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text: Buffer.concat(chunks).toString('utf8') }));
      incoming.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${path.slice(0, 80)}: no answer in 10 s`)));
    outgoing.on('error', reject);
    for (const [name, value] of headers) outgoing.setHeader(name, value);
    if (bytes !== undefined && !chunked) outgoing.setHeader('Content-Length', bytes.length);
    if (bytes === undefined) return void outgoing.end();
    if (!chunked) return void outgoing.end(bytes);
    for (let at = 0; at < bytes.length; at += 16 * 1024) outgoing.write(bytes.subarray(at, at + 16 * 1024));
    outgoing.end();
  });
}
