import { ApiError } from '@campaign-ops/api-errors';
import { s, Schema, validate } from '@campaign-ops/request-validation';
import { ListQuery } from '@campaign-ops/service-messages';

/** A body that matches `schema`, or the first API error it breaks. */
export function parseBody<T>(schema: Schema, body: unknown): T {
  const error = validate(schema, body === undefined ? {} : body);
  if (error) throw new ApiError(error.code, error.message, error.param || undefined);
  return body as T;
}

const NO_FIELDS = s.object({}, { required: [] });

/** Routes that take no body refuse one that has fields (`parameter_unknown`), as API.md wants. */
export function expectNoBody(body: unknown): void {
  if (body !== undefined) parseBody(NO_FIELDS, body);
}

/** `limit` (1..100, default 20) and `starting_after`, plus the filters a list allows; nothing else. */
export function parseListQuery(query: Record<string, unknown>, filters: Record<string, readonly string[] | 'any'> = {}): ListQuery & Record<string, string | number | undefined> {
  const result: ListQuery & Record<string, string | number | undefined> = { limit: 20 };
  for (const [key, value] of Object.entries(query)) {
    if (typeof value !== 'string') throw new ApiError('parameter_invalid', `${key} must be given once, as a plain value.`, key);
    if (key === 'limit') {
      if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100) throw new ApiError('parameter_invalid', 'limit must be a whole number from 1 to 100.', 'limit');
      result.limit = Number(value);
    } else if (key === 'starting_after') {
      if (!/^[a-z]+_[0-9A-Za-z]+$/.test(value)) throw new ApiError('parameter_invalid', 'starting_after must be an id from a previous page.', 'starting_after');
      result.startingAfter = value;
    } else if (key in filters) {
      const allowed = filters[key];
      if (allowed !== 'any' && !allowed.includes(value)) throw new ApiError('parameter_invalid', `${key} must be one of ${allowed.join(', ')}.`, key);
      result[key] = value;
    } else {
      throw new ApiError('parameter_unknown', `${key} is not a known parameter.`, key);
    }
  }
  return result;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
export function parseIdempotencyKey(header: string | undefined): string | null {
  if (header === undefined) return null;
  if (!IDEMPOTENCY_KEY.test(header)) throw new ApiError('parameter_invalid', 'Idempotency-Key must be 1 to 255 visible ASCII characters.', 'Idempotency-Key');
  return header;
}
