import { JSONSchema } from 'class-validator-jsonschema';
import { credits, environment, mode, redirectUris } from './common';
import { constant, Field, id, integer, object, text, timestamp } from './schema';

@JSONSchema({ description: "The key's account, seen from the key's mode." })
export class AccountResponse {
  @Field(id('acct', 'The account id.')) id!: string;
  @Field(text('Its name.')) name!: string;
  @Field(environment) environment!: string;
  @Field(integer("Credits left in the key's mode.")) credits_balance!: number;
  @Field(redirectUris) oauth_redirect_uris!: string[];
}

@JSONSchema({ description: 'An account as operators see it.' })
export class AdminAccountResponse {
  @Field(id('acct', 'The account id.')) id!: string;
  @Field(text('Its name.')) name!: string;
  @Field(object('Credits in each mode.', { live: credits, test: credits })) credits!: { live: number; test: number };
  @Field(redirectUris) oauth_redirect_uris!: string[];
  @Field(timestamp('When it was opened.')) created_at!: string;
}

@JSONSchema({ description: 'A newly issued API key: `key` is shown only here; only its hash is stored.' })
export class ApiKeyResponse {
  @Field(id('key', 'The key id, for revoking it.')) id!: string;
  @Field(text('The API key: `mk_live_` or `mk_test_` and at least 32 base62 characters.', { pattern: '^mk_(live|test)_[0-9A-Za-z]{32,}$' })) key!: string;
  @Field(mode) mode!: string;
  @Field(timestamp('When it was issued.')) created_at!: string;
}

@JSONSchema({ description: 'A revoked key: it answers 401 `api_key_revoked` from now on.' })
export class RevokedApiKeyResponse {
  @Field(id('key', 'The key id.')) id!: string;
  @Field(constant(true)) revoked!: true;
}
