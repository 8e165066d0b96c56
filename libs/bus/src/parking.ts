import { DEFAULT_PARKED_LIMIT, ListParkedOptions } from './bus.port';
import { errorMessage } from './payload';
import { assertDurableName } from './subjects';

/** Why a message was parked, when no handler error says it. Shared so both adapters word it alike. */
export const RETRY_ON_LAST_DELIVERY = 'retry asked on the last allowed delivery';
export const NOT_ACKED_ON_LAST_DELIVERY = 'not acked within ackWaitMs on the last allowed delivery';

const MAX_REASON_CHARS = 1000;

/**
 * The handler's error as a parking reason: one line (NATS headers cannot hold line breaks) and
 * bounded, the same in both adapters.
 */
export function failureReason(error: unknown): string {
  const oneLine = errorMessage(error).replace(/\s+/g, ' ').trim();
  const reason = oneLine || 'handler failed without a message';
  return reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS - 1)}…` : reason;
}

/** `listParked` options, checked and with defaults applied. */
export function parkedQuery(options: ListParkedOptions = {}): { durable?: string; limit: number } {
  const limit = options.limit ?? DEFAULT_PARKED_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`limit must be a whole number of at least 1, got: ${limit}`);
  if (options.durable !== undefined) assertDurableName(options.durable);
  return { durable: options.durable, limit };
}
