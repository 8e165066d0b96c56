import { IsIn, IsInt, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { Omittable } from './rules';

const MAX_CREDITS = 1_000_000_000;
const MODES = ['live', 'test'] as const;

/** POST /admin/v1/accounts. */
export class CreateAccountDto {
  @JSONSchema({ examples: ['Acme Media'] })
  @IsString() @MinLength(1) @MaxLength(255)
  name!: string;

  @JSONSchema({ description: 'Starting credits in each mode; default 1000.' })
  @Omittable() @IsInt() @Min(0) @Max(MAX_CREDITS)
  credits?: number;
}

/** POST /admin/v1/accounts/:id/keys. */
export class CreateKeyDto {
  @IsIn(MODES)
  mode!: 'live' | 'test';
}

/** POST /admin/v1/accounts/:id/credits. */
export class GrantCreditsDto {
  @IsIn(MODES)
  mode!: 'live' | 'test';

  @IsInt() @Min(1) @Max(MAX_CREDITS)
  amount!: number;
}

/** The body of a POST or DELETE that takes none: any field is `parameter_unknown`. */
export class NoBody {}
