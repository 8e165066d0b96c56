import { ListQueryDto } from '@campaign-ops/api-contract';
import { ApiError } from '@campaign-ops/api-errors';
import { ListQuery } from '@campaign-ops/service-messages';

/** The page a validated list query asks for (`limit` defaults to 20). */
export const pageOf = (query: ListQueryDto): ListQuery => ({
  limit: query.limit === undefined ? 20 : Number(query.limit),
  startingAfter: query.starting_after,
});

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
export function parseIdempotencyKey(header: string | undefined): string | null {
  if (header === undefined) return null;
  if (!IDEMPOTENCY_KEY.test(header)) throw new ApiError('parameter_invalid', 'Idempotency-Key must be 1 to 255 visible ASCII characters.', 'Idempotency-Key');
  return header;
}
