import { Allow } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

/**
 * The probes' response DTOs. They live here rather than in libs/api-contract because this library
 * (infrastructure) may not depend on the contract; the gateway's document emits them with the
 * others all the same (same generator, same `Response` suffix rule, see libs/api-contract/src/responses).
 */
/** `const` is JSON Schema 2020-12, which OpenAPI 3.1 uses (not in the generator's 3.0 typings). */
const constant = (value: string): Record<string, unknown> => ({ const: value });

@JSONSchema({ description: 'The process is alive.' })
export class HealthResponse {
  @Allow() @JSONSchema(constant('ok')) status!: 'ok';
}

@JSONSchema({ description: 'Every dependency is reachable.' })
export class ReadinessResponse {
  @Allow() @JSONSchema(constant('ready')) status!: 'ready';
  @Allow()
  @JSONSchema({
    type: 'object',
    description: 'Each dependency and its state.',
    additionalProperties: { type: 'string' },
    examples: [{ eventStore: 'ok', readStore: 'ok', bus: 'ok', processors: 'ok' }],
  })
  checks!: Record<string, string>;
}
