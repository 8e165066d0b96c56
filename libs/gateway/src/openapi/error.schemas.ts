import { ERROR_CATALOG, ErrorCode } from '@campaign-ops/api-errors';
import { JsonSchema, schemaRef } from '@campaign-ops/api-contract';

/**
 * What each error code of the catalog means, for the document. A `Record` over every code, so a
 * code added to ERROR_CATALOG does not compile until it is explained here.
 */
export const ERROR_MEANINGS: Record<ErrorCode, string> = {
  body_invalid_json: 'The body is not valid JSON.',
  parameter_missing: 'A required field or parameter is missing; `param` names it.',
  parameter_invalid: 'A field, query parameter or header has a value it cannot have; `param` names it.',
  parameter_unknown: 'A body field or query parameter that this call does not know; `param` names it.',
  url_invalid: 'The webhook URL (or an OAuth `redirect_uri`) is not a URL.',
  url_not_https: 'The webhook URL (or an OAuth `redirect_uri`, except on localhost) is not `https`.',
  url_forbidden_host: 'The webhook URL is or resolves to a loopback, private, link-local or metadata address.',
  event_unknown: 'An event name that is not in the catalog.',
  credentials_invalid: 'The provider refused the access token (`param`: `credentials.access_token`).',
  provider_account_unreachable: 'The token works, but not for this ad account at the provider.',
  state_invalid: 'An OAuth `state` that was never issued or is past its 15 minutes.',
  redirect_uri_not_registered:
    "The `redirect_uri` has not the origin and path of one of the account's `oauth_redirect_uris` (an operator registers them: PATCH /admin/v1/accounts/:id).",
  api_key_missing: 'No `Authorization: Bearer` header.',
  api_key_invalid: 'The key (or admin token) is not valid.',
  api_key_revoked: 'The key has been revoked.',
  insufficient_credits: "The balance of the key's mode is below the price of the call; nothing was done.",
  resource_missing: 'No such resource for this account and mode (another account’s id answers the same).',
  route_not_found: 'No such route (also the Admin API when ADMIN_TOKEN is not set).',
  method_not_allowed: 'The path exists but not with this method; `Allow` lists the methods.',
  idempotency_key_reused: 'This Idempotency-Key was used in the last 24 h with another body.',
  idempotency_key_in_use: 'The first request with this Idempotency-Key is still in flight.',
  dispatch_not_retryable: 'Only a `failed` dispatch can be retried.',
  connection_exists: 'The channel already has an active (or reauth_required) connection to another provider account; delete it first.',
  payload_too_large: 'The body is over 64 KiB.',
  unsupported_media_type: 'A body that is not `application/json`.',
  connection_required: 'A live launch needs an `active` connection for the channel.',
  connection_reauth_required: "The channel's connection needs re-authentication.",
  channel_live_unavailable: 'The channel cannot run live launches yet.',
  channel_not_configured: 'The channel has no OAuth client id and secret here; import a token instead.',
  provider_validation_failed: "The dry run: the ad network (or the channel's rules) refused the campaign; `provider_code` is the network's own code.",
  rate_limited: 'Too many requests for this key (or, without a valid key, from this address); wait `Retry-After` seconds.',
  internal_error: 'Something went wrong on our side; the request id helps us find it.',
  provider_unavailable: 'The ad network did not answer (or failed); try again shortly.',
  service_unavailable:
    'A dependency is down, or (a launch) more dispatches wait for their first try than start within `DISPATCH_BACKLOG_SECONDS`, nothing charged; try again after `Retry-After` seconds.',
};

const CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];
const TYPES = [...new Set(CODES.map((code) => ERROR_CATALOG[code].type))];

const table = [
  '| code | status | type | meaning |',
  '|---|---|---|---|',
  ...CODES.map((code) => `| \`${code}\` | ${ERROR_CATALOG[code].status} | \`${ERROR_CATALOG[code].type}\` | ${ERROR_MEANINGS[code]} |`),
].join('\n');

/** The error envelope of docs/api.md#errors, with every code and type of the catalog. */
export const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  description: `Every error, on every path, in the envelope. The codes:\n\n${table}`,
  required: ['success', 'error', 'request_id'],
  properties: {
    success: { const: false },
    error: {
      type: 'object',
      required: ['type', 'code', 'message'],
      properties: {
        type: { type: 'string', enum: TYPES, description: 'The kind of error; fixed by the code.' },
        code: { type: 'string', enum: CODES, description: 'What went wrong; the table above.' },
        message: { type: 'string', description: 'In words, for people; never a secret or a stack trace.' },
        param: { type: 'string', description: 'The field, query parameter or header at fault, as a dotted path.', examples: ['campaign.budget.currency'] },
        provider_code: {
          type: ['string', 'null'],
          description: "Only with `provider_validation_failed`: the ad network's own code (or `currency_mismatch`, a rule of ours).",
          examples: ['currency_mismatch'],
        },
        checks: { type: 'object', additionalProperties: { type: 'string' }, description: 'Only from /readyz: each dependency and its state.' },
      },
      additionalProperties: false,
    },
    request_id: schemaRef('RequestId'),
  },
  additionalProperties: false,
};

/** An example error body of this code, for the responses of the document. */
export const errorExample = (code: ErrorCode) => ({
  success: false,
  error: { type: ERROR_CATALOG[code].type, code, message: ERROR_MEANINGS[code] },
  request_id: 'req_01JBZ8KQ4T7W3X9M2N5P6R8S0V',
});
