import { Allow } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

/**
 * The pieces the response DTOs describe their fields with. A response DTO is a class whose every
 * field carries `@Field(schema)`: class-validator-jsonschema, the generator of the request DTOs'
 * schemas, emits it (every field required, `additionalProperties: false` added by the gateway);
 * the schema is named after the class without its `Response` suffix (`DispatchResponse` →
 * `Dispatch`), the name partners' generated clients know.
 */
export type JsonSchema = Record<string, unknown>;

/** A response DTO class. */
export type ResponseDto = abstract new (...args: never[]) => unknown;

/** `DispatchResponse` → `Dispatch`: the name of a response DTO's schema in the document. */
export const responseSchemaName = (dto: ResponseDto): string => dto.name.replace(/Response$/, '');

export const schemaRef = (name: string | ResponseDto): JsonSchema => ({
  $ref: `#/components/schemas/${typeof name === 'string' ? name : responseSchemaName(name)}`,
});

/** A field of a response: always present (null where it has no value, when its schema allows it). */
export const Field =
  (schema: JsonSchema): PropertyDecorator =>
  (target, key) => {
    Allow()(target, key as string);
    JSONSchema(schema)(target, key as string);
  };

/** Answers that are not an object of fields (a choice of events, the document itself, a page): their schema as is. */
export const RAW_RESPONSE_SCHEMAS = new Map<ResponseDto, JsonSchema>();
export const RawResponse =
  (schema: JsonSchema): ClassDecorator =>
  (target) => {
    RAW_RESPONSE_SCHEMAS.set(target as unknown as ResponseDto, schema);
  };

export const id = (prefix: string, description: string): JsonSchema => ({
  type: 'string',
  pattern: `^${prefix}_[0-9A-Za-z]+$`,
  description,
  examples: [`${prefix}_01JBZ8KQ4T7W3X9M2N5P6R8S0V`],
});
/** docs/api.md#errors: ISO 8601 UTC with milliseconds and `Z`. */
export const timestamp = (description: string): JsonSchema => ({
  type: 'string',
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  description,
  examples: ['2026-12-01T09:00:00.000Z'],
});
export const orNull = (schema: JsonSchema): JsonSchema => ({
  ...schema,
  type: [schema.type, 'null'],
  ...(schema.examples ? { examples: [...(schema.examples as unknown[]), null] } : {}),
});
export const text = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });
export const integer = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', description, ...extra });
export const oneOf = (values: readonly string[], description: string): JsonSchema => ({ type: 'string', enum: [...values], description });
export const constant = (value: string | boolean, description?: string): JsonSchema => ({ const: value, ...(description ? { description } : {}) });
/** An inline object (not a DTO of its own) whose every property is always present, and which has no other. */
export const object = (description: string, properties: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  description,
  required: Object.keys(properties),
  properties,
  additionalProperties: false,
});
