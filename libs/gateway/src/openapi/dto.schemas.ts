import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { CURRENCY_CODES, TIME_ZONES, UTC_TIMESTAMP_PATTERN } from '@campaign-ops/api-contract';
import type { JsonSchema } from './resource.schemas';

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

/**
 * The request DTOs of libs/api-contract as JSON Schemas, read from the same class-validator
 * decorators that validate them (so the document cannot drift from what is enforced), keyed by
 * class name. Unknown fields are refused (`parameter_unknown`), hence `additionalProperties: false`.
 */
export function dtoSchemas(): Record<string, JsonSchema> {
  const schemas = validationMetadatasToSchemas({
    refPointerPrefix: '#/components/schemas/',
    additionalConverters: RULE_SCHEMAS,
  }) as Record<string, JsonSchema>;
  return {
    ...Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, { ...schema, additionalProperties: false }])),
    TimeZone: { type: 'string', description: 'An IANA time zone name, exactly as the tz database writes it.', enum: [...TIME_ZONES] },
    CurrencyCode: { type: 'string', description: 'An ISO 4217 currency code.', enum: [...CURRENCY_CODES] },
  };
}
