import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import type { RuleContext } from '@campaign-ops/api-contract';
import { ApiError } from '@campaign-ops/api-errors';
import { shapeRefusal } from './json-body.middleware';

const describeType = (value: unknown) => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
};
const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);

/** Rules on what a value is, answered before rules on what it holds ("an integer" before "at least 1"). */
const TYPE_RULES = new Set(['isString', 'isInt', 'isBoolean', 'isArray', 'isObject', 'nestedValidation']);

/**
 * Request DTOs (libs/api-contract) validated the way docs/api.md#errors answers: unknown fields are
 * `parameter_unknown`, absent ones `parameter_missing`, anything else `parameter_invalid` (or the
 * rule's own code), with the dotted `param` of the first error.
 *
 * The first error is chosen here, in a fixed order, rather than by class-validator's
 * `stopAtFirstError`: class-validator runs a field's decorators bottom-up, so `@IsInt() @Min(1)`
 * would report `Min` for a string. At each level: unknown fields, then the fields in the order the
 * class declares them; within a field, its type, then the rules as written left to right, then its
 * own fields, then rules that compare fields.
 */
@Injectable()
export class ApiValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: false,
      validationError: { target: false, value: true },
      exceptionFactory: (errors) => firstError(errors, '') ?? new ApiError('parameter_invalid', 'The request is not valid.'),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // An array or a scalar is never a DTO; Nest's own answer ("object is expected") names no field.
    if (metadata.type === 'body' && value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value)) && this.toValidate(metadata)) {
      throw new ApiError('parameter_invalid', `The body must be a JSON object, not ${describeType(value)}`);
    }
    return super.transform(metadata.type === 'body' && value === undefined ? {} : value, metadata);
  }

  /**
   * Nest deletes `__proto__`, `prototype` and `constructor` here, and class-transformer then skips
   * fields named like the DTO's inherited methods (`toString`, `valueOf`): such a field would pass
   * unseen (`?toString=1` on a list answered 200, `?colour=red` 400). They are refused as unknown
   * instead, in a query as in a body (where jsonBodyMiddleware has refused them already).
   */
  protected override stripProtoKeys(value: unknown): void {
    const refused = shapeRefusal(value);
    if (refused) throw refused;
  }
}

function firstError(errors: ValidationError[], path: string): ApiError | undefined {
  for (const error of errors) {
    const found = errorOf(error, join(path, error.property));
    if (found) return found;
  }
  return undefined;
}

function errorOf(error: ValidationError, param: string): ApiError | undefined {
  const rules = Object.keys(error.constraints ?? {}).reverse(); // as written, left to right
  if (rules.includes('whitelistValidation')) return new ApiError('parameter_unknown', `${param} is not a known parameter`, param);
  if (rules.length > 0 && error.value === undefined) return new ApiError('parameter_missing', `${param} is required`, param);
  const context = (rule: string) => (error.contexts?.[rule] ?? {}) as RuleContext;
  const type = rules.find((rule) => TYPE_RULES.has(rule) && !context(rule).item);
  if (type) return new ApiError('parameter_invalid', `${param} ${typeMessage(type)}, not ${describeType(error.value)}`, param);
  const own = rules.find((rule) => !context(rule).afterFields);
  if (own) return ruleError(error, own, param, context(own));
  const nested = firstError(error.children ?? [], param);
  if (nested) return nested;
  const across = rules[0];
  return across === undefined ? undefined : ruleError(error, across, param, context(across));
}

function ruleError(error: ValidationError, rule: string, param: string, context: RuleContext): ApiError {
  let at = context.at ? join(param, context.at) : param;
  let subject = error.value;
  if (context.item && Array.isArray(error.value)) {
    const index = error.value.findIndex((item) => !context.item!(item));
    at = join(param, String(index));
    subject = error.value[index];
  }
  // class-validator's own messages begin with the field's name ("each value in events must …").
  const message = error.constraints![rule].replace(new RegExp(`^(each value in )?${error.property} `), '');
  const detail =
    context.item && TYPE_RULES.has(rule) ? `, not ${describeType(subject)}` : context.code === 'event_unknown' ? ` (${String(subject)} is not one)` : '';
  return new ApiError(context.code ?? 'parameter_invalid', `${at} ${message}${detail}`, at);
}

function typeMessage(rule: string): string {
  switch (rule) {
    case 'isString':
      return 'must be a string';
    case 'isInt':
      return 'must be an integer';
    case 'isBoolean':
      return 'must be true or false';
    case 'isArray':
      return 'must be an array';
    default:
      return 'must be a JSON object';
  }
}
