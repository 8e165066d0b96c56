import type { Mode } from '@campaign-ops/account-domain';
import { ArrayMaxSize, IsArray, IsIn, IsInt, isString, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { eachItem, IsRegistrableRedirectUri, isRegistrableRedirectUri, Omittable } from './rules';

const MAX_CREDITS = 1_000_000_000;
const MODES = ['live', 'test'] as const;
const MAX_REDIRECT_URIS = 20;
const REDIRECT_URIS_DOC = {
  description:
    "Where the account's OAuth rounds may send a person back (POST /v1/connections with `redirect_uri`): at most 20 absolute https URLs (http only for localhost), without query or fragment. A partner's `redirect_uri` must have the origin and path of one of them (its query is the partner's own). Test keys may also use any http://localhost URL.",
  examples: [['https://partner.example/connected']],
};

/** POST /admin/v1/accounts. */
export class CreateAccountDto {
  @JSONSchema({ examples: ['Acme Media'] })
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  name!: string;

  @JSONSchema({ description: 'Starting credits in each mode; default 1000.' })
  @Omittable()
  @IsInt()
  @Min(0)
  @Max(MAX_CREDITS)
  credits?: number;

  @JSONSchema(REDIRECT_URIS_DOC)
  @Omittable()
  @IsArray()
  @ArrayMaxSize(MAX_REDIRECT_URIS)
  @IsString(eachItem(isString))
  @IsRegistrableRedirectUri(eachItem(isRegistrableRedirectUri))
  oauth_redirect_uris?: string[];
}

/** PATCH /admin/v1/accounts/:id: what is given replaces what the account has. */
export class UpdateAccountDto {
  @JSONSchema({ examples: ['Acme Media EU'] })
  @Omittable()
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  name?: string;

  @JSONSchema(REDIRECT_URIS_DOC)
  @Omittable()
  @IsArray()
  @ArrayMaxSize(MAX_REDIRECT_URIS)
  @IsString(eachItem(isString))
  @IsRegistrableRedirectUri(eachItem(isRegistrableRedirectUri))
  oauth_redirect_uris?: string[];
}

/** POST /admin/v1/accounts/:id/keys. */
export class CreateKeyDto {
  @IsIn(MODES)
  mode!: Mode;
}

/** POST /admin/v1/accounts/:id/credits. */
export class GrantCreditsDto {
  @IsIn(MODES)
  mode!: Mode;

  @IsInt()
  @Min(1)
  @Max(MAX_CREDITS)
  amount!: number;
}

/** The body of a POST or DELETE that takes none: any field is `parameter_unknown`. */
export class NoBody {}
