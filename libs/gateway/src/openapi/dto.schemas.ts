import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { CURRENCY_CODES, JsonSchema, RAW_RESPONSE_SCHEMAS, responseSchemaName, TIME_ZONES, UTC_TIMESTAMP_PATTERN } from '@campaign-ops/api-contract';

/** JSON Schema of the rules libs/api-contract adds to class-validator's own. */
const RULE_SCHEMAS: Record<string, JsonSchema> = {
  isUtcTimestamp: { type: 'string', format: 'date-time', pattern: UTC_TIMESTAMP_PATTERN },
  isTimeZone: { $ref: '#/components/schemas/TimeZone' },
  isCurrencyCode: { $ref: '#/components/schemas/CurrencyCode' },
  isRegistrableRedirectUri: { type: 'string', format: 'uri' },
  isAfter: {},
  endsWithLifetimeBudget: {},
  notWith: {},
};

const RESPONSE = /Response$/;

/** Every DTO of libs/api-contract as class-validator-jsonschema reads it, keyed by class name; none takes a field it does not declare. */
function classSchemas(): Record<string, JsonSchema> {
  const schemas = validationMetadatasToSchemas({
    refPointerPrefix: '#/components/schemas/',
    additionalConverters: RULE_SCHEMAS,
  }) as Record<string, JsonSchema>;
  return Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, { ...schema, additionalProperties: false }]));
}

/**
 * The request DTOs of libs/api-contract as JSON Schemas, read from the same class-validator
 * decorators that validate them (so the document cannot drift from what is enforced), keyed by
 * class name. Unknown fields are refused (`parameter_unknown`), hence `additionalProperties: false`.
 */
export function dtoSchemas(): Record<string, JsonSchema> {
  return {
    ...Object.fromEntries(Object.entries(classSchemas()).filter(([name]) => !RESPONSE.test(name))),
    TimeZone: { type: 'string', description: 'An IANA time zone name, exactly as the tz database writes it.', enum: [...TIME_ZONES] },
    CurrencyCode: { type: 'string', description: 'An ISO 4217 currency code.', enum: [...CURRENCY_CODES] },
  };
}

/**
 * The response DTOs of libs/api-contract (libs/api-contract/src/responses), by the same generator,
 * named without their `Response` suffix: every field required unless optional, nullable ones typed
 * with `null`, and `additionalProperties: false`, so an answer with a field its DTO lacks is caught.
 */
export function responseSchemas(): Record<string, JsonSchema> {
  return {
    ...Object.fromEntries(Object.entries(classSchemas()).flatMap(([name, schema]) => (RESPONSE.test(name) ? [[name.replace(RESPONSE, ''), schema]] : []))),
    ...Object.fromEntries([...RAW_RESPONSE_SCHEMAS].map(([dto, schema]) => [responseSchemaName(dto), schema])),
  };
}
