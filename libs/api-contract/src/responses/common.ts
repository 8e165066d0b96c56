import { CHANNELS } from '@campaign-ops/channels';
import { integer, JsonSchema, oneOf } from './schema';

export const channel = oneOf(CHANNELS, 'The ad network.');
export const environment = oneOf(['live', 'sandbox'], '`live` for a live key, `sandbox` for a test key.');
export const mode = oneOf(['live', 'test'], 'The key mode (Admin API).');
export const credits = integer('Credits.', { minimum: 0 });
export const redirectUris: JsonSchema = {
  type: 'array',
  items: { type: 'string', format: 'uri' },
  description: "Where the account's OAuth rounds may send a person back: a `redirect_uri` must have the origin and path of one of them.",
  examples: [['https://partner.example/connected']],
};
