/**
 * The closed set of API errors (docs/api.md#errors), each mapped to its HTTP status and type in one place.
 * Services answer over the bus with these codes as values; the gateway turns them into HTTP.
 */
export const ERROR_CATALOG = {
  body_invalid_json: { status: 400, type: 'invalid_request_error' },
  parameter_missing: { status: 400, type: 'invalid_request_error' },
  parameter_invalid: { status: 400, type: 'invalid_request_error' },
  parameter_unknown: { status: 400, type: 'invalid_request_error' },
  url_invalid: { status: 400, type: 'invalid_request_error' },
  url_not_https: { status: 400, type: 'invalid_request_error' },
  url_forbidden_host: { status: 400, type: 'invalid_request_error' },
  event_unknown: { status: 400, type: 'invalid_request_error' },
  credentials_invalid: { status: 400, type: 'invalid_request_error' },
  provider_account_unreachable: { status: 400, type: 'invalid_request_error' },
  state_invalid: { status: 400, type: 'invalid_request_error' },
  redirect_uri_not_registered: { status: 400, type: 'invalid_request_error' },
  api_key_missing: { status: 401, type: 'authentication_error' },
  api_key_invalid: { status: 401, type: 'authentication_error' },
  api_key_revoked: { status: 401, type: 'authentication_error' },
  insufficient_credits: { status: 402, type: 'invalid_request_error' },
  resource_missing: { status: 404, type: 'invalid_request_error' },
  route_not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  idempotency_key_reused: { status: 409, type: 'idempotency_error' },
  idempotency_key_in_use: { status: 409, type: 'idempotency_error' },
  dispatch_not_retryable: { status: 409, type: 'invalid_request_error' },
  connection_exists: { status: 409, type: 'invalid_request_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  connection_required: { status: 422, type: 'invalid_request_error' },
  connection_reauth_required: { status: 422, type: 'invalid_request_error' },
  channel_live_unavailable: { status: 422, type: 'invalid_request_error' },
  channel_not_configured: { status: 422, type: 'invalid_request_error' },
  provider_validation_failed: { status: 422, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'api_error' },
  provider_unavailable: { status: 502, type: 'api_error' },
  service_unavailable: { status: 503, type: 'api_error' },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;
export type ErrorType = (typeof ERROR_CATALOG)[ErrorCode]['type'];

/** An error as it travels: in a bus reply, and (with type) in the HTTP body. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  param?: string;
  /** The ad network's own code, with `provider_validation_failed` (docs/api.md#dispatches-and-retries, the dry run). */
  provider_code?: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param?: string,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers: Record<string, string> = {},
    /** The ad network's own code (`provider_validation_failed`); undefined for every other error. */
    readonly providerCode?: string | null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get status(): number {
    return ERROR_CATALOG[this.code].status;
  }

  get type(): ErrorType {
    return ERROR_CATALOG[this.code].type;
  }

  toBody(): ErrorBody {
    return {
      code: this.code,
      message: this.message,
      ...(this.param ? { param: this.param } : {}),
      ...(this.providerCode !== undefined ? { provider_code: this.providerCode } : {}),
    };
  }

  static fromBody(body: ErrorBody): ApiError {
    return new ApiError(isErrorCode(body.code) ? body.code : 'internal_error', body.message, body.param, {}, body.provider_code);
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CATALOG, value);
}

/**
 * A service's answer over the bus: a value or an API error, never an exception across the wire.
 * A refusal to try again later (503, 429) may say after how many seconds (`Retry-After`; 1 unsaid).
 */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: ErrorBody; retryAfterSeconds?: number };

export const success = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const failure = (code: ErrorCode, message: string, param?: string): Outcome<never> => ({
  ok: false,
  error: { code, message, ...(param ? { param } : {}) },
});

/** The ad network refused the campaign (the dry run): 422 with the network's own message and code. */
export const providerRefusal = (message: string, providerCode: string | null): Outcome<never> => ({
  ok: false,
  error: { code: 'provider_validation_failed', message, provider_code: providerCode },
});

/** A refusal for now (503 `service_unavailable`): try again after `retryAfterSeconds`. */
export const unavailable = (message: string, retryAfterSeconds = 1): Outcome<never> => ({
  ok: false,
  error: { code: 'service_unavailable', message },
  retryAfterSeconds,
});

/** The codes whose answers carry `Retry-After`. */
const TRY_AGAIN_LATER: ReadonlySet<ErrorCode> = new Set(['service_unavailable', 'rate_limited']);

/** Unwraps an outcome, throwing the ApiError it carries (with `Retry-After` where its code has one). */
export function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  const error = ApiError.fromBody(outcome.error);
  if (!TRY_AGAIN_LATER.has(error.code)) throw error;
  throw new ApiError(error.code, error.message, error.param, { 'Retry-After': String(outcome.retryAfterSeconds ?? 1) }, error.providerCode);
}
