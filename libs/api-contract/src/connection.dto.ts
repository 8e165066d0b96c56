import { Type } from 'class-transformer';
import { IsIn, IsObject, IsString, Matches, MaxLength, MinLength, ValidateBy, ValidateNested, ValidationOptions } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { Channel, CHANNELS } from '@campaign-ops/channels';
import { IsCurrencyCode, IsTimeZone, IsUtcTimestamp, Omittable, RuleContext } from './rules';
import { ListQueryDto } from './list-query.dto';

export const CONNECTION_STATUSES = ['pending', 'active', 'reauth_required', 'revoked'] as const;
const MAX_TOKEN_LENGTH = 8192;

/** A field that cannot be sent together with `other` (checked once both are fine on their own). */
const NotWith = (other: string, options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'notWith',
      constraints: [other],
      validator: {
        validate: (_value, args) => (args?.object as Record<string, unknown>)[other] === undefined,
        defaultMessage: (args) => `cannot be sent with ${args?.constraints[0]}: send one of them`,
      },
    },
    { ...options, context: { afterFields: true } satisfies RuleContext },
  );

/** Tokens the partner already has (docs/api.md#connections-and-oauth, token import). Kept encrypted; never shown again. */
export class ConnectionCredentialsDto {
  @JSONSchema({ description: "The provider's OAuth access token.", writeOnly: true })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_TOKEN_LENGTH)
  access_token!: string;

  @JSONSchema({ description: 'The refresh token, so the service can refresh the access token before it expires.', writeOnly: true })
  @Omittable()
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_TOKEN_LENGTH)
  refresh_token?: string;

  @JSONSchema({ description: 'When the access token expires (ISO 8601 UTC); without it, it is taken not to expire.', examples: ['2027-01-31T00:00:00Z'] })
  @Omittable()
  @IsString()
  @IsUtcTimestamp()
  expires_at?: string;
}

/** Test keys only: the simulated ad account. */
export class SandboxAccountDto {
  @JSONSchema({ description: 'The simulated ad account’s currency; default USD.', examples: ['EUR'] })
  @Omittable()
  @IsCurrencyCode()
  currency?: string;

  @JSONSchema({ description: 'The simulated ad account’s time zone; default UTC.', examples: ['Europe/Berlin'] })
  @Omittable()
  @IsString()
  @MaxLength(64)
  @IsTimeZone()
  timezone?: string;
}

const REDIRECT_URI_DOC = {
  description:
    'Starts an OAuth round: where the person’s browser goes back after the consent, with `connection_id` and `status` (or `error`) added to its query. https (http only for localhost).',
  format: 'uri',
  examples: ['https://partner.example/connected'],
};

/** What NotWith('credentials') checks on `redirect_uri`, for the document. */
const ONE_OF_CREDENTIALS_OR_REDIRECT = {
  not: { properties: { credentials: {}, redirect_uri: {} }, required: ['credentials', 'redirect_uri'] },
  description: '`credentials` or `redirect_uri`, never both.',
};

/** POST /v1/connections: `credentials` (token import) or `redirect_uri` (OAuth); a test key may send neither (a sandbox connection). */
@JSONSchema(ONE_OF_CREDENTIALS_OR_REDIRECT)
export class CreateConnectionDto {
  @JSONSchema({ examples: ['meta_ads'] })
  @IsIn(CHANNELS)
  channel!: Channel;

  @JSONSchema({ description: 'The ad account at the provider (as the provider writes it).', examples: ['act_1234567890'] })
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  @Matches(/^[\x21-\x7e]+$/, { message: 'must be printable ASCII without spaces' })
  provider_account_id!: string;

  @Omittable()
  @IsObject()
  @ValidateNested()
  @Type(() => ConnectionCredentialsDto)
  credentials?: ConnectionCredentialsDto;

  @JSONSchema(REDIRECT_URI_DOC)
  @Omittable()
  @IsString()
  @MaxLength(2048)
  @NotWith('credentials')
  redirect_uri?: string;

  @JSONSchema({ description: 'Test keys only: the simulated ad account’s currency and time zone.' })
  @Omittable()
  @IsObject()
  @ValidateNested()
  @Type(() => SandboxAccountDto)
  sandbox?: SandboxAccountDto;
}

/** POST /v1/connections/:id/reauthorize: new `credentials`, or `redirect_uri` for a new OAuth round; a test key may send neither. */
@JSONSchema(ONE_OF_CREDENTIALS_OR_REDIRECT)
export class ReauthorizeConnectionDto {
  @Omittable()
  @IsObject()
  @ValidateNested()
  @Type(() => ConnectionCredentialsDto)
  credentials?: ConnectionCredentialsDto;

  @JSONSchema(REDIRECT_URI_DOC)
  @Omittable()
  @IsString()
  @MaxLength(2048)
  @NotWith('credentials')
  redirect_uri?: string;
}

/** GET /v1/connections. */
export class ListConnectionsQueryDto extends ListQueryDto {
  @JSONSchema({ description: 'Only connections to this channel.' })
  @Omittable()
  @IsString()
  @IsIn(CHANNELS)
  channel?: string;

  @JSONSchema({ description: 'Only connections in this status.' })
  @Omittable()
  @IsString()
  @IsIn(CONNECTION_STATUSES)
  status?: (typeof CONNECTION_STATUSES)[number];
}
