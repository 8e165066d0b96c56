import { TransformationType } from 'class-transformer';
import { getMetadataStorage, ValidationTypes } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import type * as TransformerStorage from 'class-transformer/types/storage';

/** class-transformer's own metadata (`@Type`, `@Transform`, ...), which it does not export from its index. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as typeof TransformerStorage;

/** Whether a request body surely passes a DTO's rules: true only where ApiValidationPipe would accept it. */
export type Acceptor = (value: unknown) => boolean;

type Constructor = abstract new (...args: never[]) => object;

interface PropertyCheck {
  name: string;
  /** `@ValidateIf`/`@IsOptional` conditions: all must hold for the rules to run. */
  conditions: Array<(object: object, value: unknown) => boolean>;
  /** Each rule's validators, with the arguments class-validator gives them. */
  rules: Array<{ metadata: ValidationMetadata; validate: (value: unknown, args: object) => unknown }>;
  /** The `@Type` class of a `@ValidateNested` field. */
  nested: Acceptor | null;
}

/** A DTO's rules compiled (`accepts`), or why they could not be (`notCompilable`: the pipe must judge every body). */
export type Compiled = { accepts: Acceptor } | { notCompilable: string };

/**
 * The rules class-validator keeps for a DTO, compiled once into a yes/no check for the gateway's
 * hot path: the same validators run on the same values, in one pass, without class-transformer's
 * copy, class-validator's error objects or Nest's pipe. It says yes only to a body the pipe
 * (whitelist, forbidNonWhitelisted) accepts; for every other body the caller goes the pipe's way,
 * which words the error. A DTO using anything this does not model (`each`, groups, `always`,
 * `validateIf`, async rules, nested fields without `@Type`, class-transformer's
 * `@Transform`/`@Expose`/`@Exclude`) is not compilable, and says why: no shortcut, the pipe for
 * every body.
 */
export function compileAcceptor(dto: Constructor): Compiled {
  try {
    return { accepts: acceptorOf(dto, new Set()) };
  } catch (error) {
    if (error instanceof NotCompilable) return { notCompilable: error.message };
    throw error;
  }
}

class NotCompilable extends Error {}

const MODELLED = new Set<string>([ValidationTypes.CUSTOM_VALIDATION, ValidationTypes.CONDITIONAL_VALIDATION, ValidationTypes.NESTED_VALIDATION]);

function acceptorOf(dto: Constructor, compiling: Set<Constructor>): Acceptor {
  if (compiling.has(dto)) throw new NotCompilable(`${dto.name} nests itself`);
  compiling.add(dto);
  const storage = getMetadataStorage();
  // As class-validator's executor asks for a class's rules under the pipe's options (no schema, no
  // groups; `always` changes nothing when no rule has groups, and a rule with groups is refused below).
  // Stryker disable next-line BooleanLiteral: equivalent, as said above
  const metadatas = storage.getTargetValidationMetadatas(dto as never, undefined as never, false, false);
  if (metadatas.length === 0) throw new NotCompilable(`${dto.name} has no rules`);
  const transformer = defaultMetadataStorage;
  if (transformer.getExposedMetadatas(dto).length > 0 || transformer.getExcludedMetadatas(dto).length > 0)
    throw new NotCompilable(`${dto.name} exposes or excludes fields`);
  const grouped = storage.groupByPropertyName(metadatas);
  const properties: PropertyCheck[] = Object.entries(grouped).map(([name, own]) => {
    if (transformer.findTransformMetadatas(dto, name, TransformationType.PLAIN_TO_CLASS).length > 0)
      throw new NotCompilable(`${dto.name}.${name} is transformed`);
    const check: PropertyCheck = { name, conditions: [], rules: [], nested: null };
    for (const metadata of own) {
      if (!MODELLED.has(metadata.type) || metadata.each || metadata.always || (metadata.groups?.length ?? 0) > 0 || metadata.validateIf)
        throw new NotCompilable(`${dto.name}.${name}: ${metadata.type}`);
      if (metadata.type === ValidationTypes.CONDITIONAL_VALIDATION) check.conditions.push(metadata.constraints[0]);
      else if (metadata.type === ValidationTypes.NESTED_VALIDATION) {
        const type = transformer.findTypeMetadata(dto, name)?.typeFunction() as Constructor | undefined;
        if (!type) throw new NotCompilable(`${dto.name}.${name} is nested without @Type`);
        check.nested = acceptorOf(type, compiling);
      } else {
        for (const constraint of storage.getTargetValidatorConstraints(metadata.constraintCls)) {
          if (constraint.async) throw new NotCompilable(`${dto.name}.${name}: async ${constraint.name}`);
          check.rules.push({ metadata, validate: (value, args) => constraint.instance.validate(value, args as never) });
        }
      }
    }
    return check;
  });
  compiling.delete(dto);
  const known = new Set(properties.map(({ name }) => name));
  const targetName = dto.name;

  return (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) if (!known.has(key)) return false;
    for (const { name, conditions, rules, nested } of properties) {
      const field = object[name];
      if (!conditions.every((condition) => condition(object, field))) continue;
      for (const { metadata, validate } of rules) {
        const verdict = validate(field, { targetName, property: name, object, value: field, constraints: metadata.constraints });
        if (verdict !== true) return false; // a promise, or a refusal
      }
      // class-validator validates an array's items as the nested type; no field of ours is one.
      if (nested && field !== undefined && (Array.isArray(field) || !nested(field))) return false;
    }
    return true;
  };
}
