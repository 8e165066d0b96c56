import { Allow, IsOptional } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { channel, environment } from './common';
import { Field, id, oneOf, orNull, text, timestamp } from './schema';

@JSONSchema({
  description:
    'A connection of the account (in the key’s mode) to one ad account at a provider (docs/api.md, "Connections and OAuth"). Tokens are never shown.',
})
export class ConnectionResponse {
  @Field(id('con', 'The connection id.')) id!: string;
  @Field(channel) channel!: string;
  @Field(
    oneOf(
      ['pending', 'active', 'reauth_required', 'revoked'],
      '`pending` until the OAuth consent, `active`, `reauth_required` when the provider refused its token, `revoked` once deleted or replaced.',
    ),
  )
  status!: string;
  @Field(text('The ad account at the provider.', { examples: ['act_1234567890'] })) provider_account_id!: string;
  @Field(environment) environment!: string;
  @Field({ type: 'array', description: 'The scopes asked for at the consent (empty for an imported token).', items: { type: 'string' } }) scopes!: string[];
  @Field(orNull(text("The ad account's currency (ISO 4217), read from the provider; null while pending.", { examples: ['EUR'] }))) currency!: string | null;
  @Field(orNull(text("The ad account's time zone (IANA), read from the provider; null while pending.", { examples: ['Europe/Berlin'] }))) timezone!:
    string | null;
  @Field(orNull(timestamp('When the access token expires; it is refreshed before. Null when it does not expire (or is not known).'))) expires_at!:
    string | null;
  @Field(orNull(text('Why the connection needs reauthorization.', { examples: ['refresh_refused'] }))) reauth_reason!: string | null;
  @Field(timestamp('When the connection was made.')) created_at!: string;
  @Field(timestamp('Its last change.')) updated_at!: string;
}

/** A connection; `authorization_url` only when the call started an OAuth round (so not required). */
@JSONSchema({ description: 'A connection; with `authorization_url` when the call started an OAuth round.' })
export class ConnectionWithAuthorizationUrlResponse extends ConnectionResponse {
  @JSONSchema(text('Only when an OAuth round started: the consent page to send the person’s browser to (good for 15 minutes, once).', { format: 'uri' }))
  @Allow()
  @IsOptional()
  authorization_url?: string;
}

@JSONSchema({ description: 'Where the browser is sent (also in `Location`).' })
export class OAuthRedirectResponse {
  @Field(
    text("The partner's `redirect_uri` with `connection_id` and `status`, or `error`, added to its query.", {
      format: 'uri',
      examples: ['https://partner.example/connected?connection_id=con_01JBZ8KQ4T7W3X9M2N5P6R8S0V&status=active'],
    }),
  )
  location!: string;
}
