import type { Mode } from '@campaign-ops/account-domain';
import { nextRetryDelay } from './retry-schedule';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event on its way to one endpoint: stored before the first attempt, updated after each. */
export interface Delivery {
  id: string;
  endpoint_id: string;
  account_id: string;
  mode: Mode;
  event_id: string;
  event: string;
  /** The exact body, the same bytes on every attempt. */
  body: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  /** While an attempt is under way; a worker that dies leaves it to expire. */
  lease_until: string | null;
  created_at: string;
  updated_at: string;
  /**
   * Each attempt, oldest first (the last MAX_ATTEMPT_LOG): when it started, how long it took, and
   * how it ended. For operators (`ops inspect`); not part of the API's delivery resource. Absent
   * on deliveries recorded before it was kept.
   */
  attempt_log?: DeliveryAttempt[];
  [key: string]: unknown;
}

/** One try to deliver: its number, when it started, how long it took, the status code or the error. */
export interface DeliveryAttempt {
  attempt: number;
  at: string;
  duration_ms: number | null;
  succeeded: boolean;
  status_code: number | null;
  error: string | null;
}

/** How many attempts a delivery keeps in its log (the newest). */
export const MAX_ATTEMPT_LOG = 50;

/** A delivery about to be tried for the first time: due now, nothing tried yet. */
export function pendingDelivery(what: Pick<Delivery, 'id' | 'endpoint_id' | 'account_id' | 'mode' | 'event_id' | 'event' | 'body'>, now: string): Delivery {
  return {
    ...what,
    status: 'pending',
    attempts: 0,
    last_status_code: null,
    last_error: null,
    next_attempt_at: now,
    lease_until: null,
    created_at: now,
    updated_at: now,
  };
}

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  /** Nothing to retry for: the endpoint is gone or disabled. */
  final?: boolean;
  /** When the attempt started (ISO 8601) and how long it took; default: `now` of afterAttempt, unknown. */
  startedAt?: string;
  durationMs?: number;
}

/** The delivery after an attempt: succeeded, scheduled again, or failed for good. */
export function afterAttempt(delivery: Delivery, result: AttemptResult, now: Date, schedule: readonly number[], random?: () => number): Delivery {
  const attempts = delivery.attempts + 1;
  const logged: DeliveryAttempt = {
    attempt: attempts,
    at: result.startedAt ?? now.toISOString(),
    duration_ms: result.durationMs ?? null,
    succeeded: result.ok,
    status_code: result.statusCode,
    error: result.ok ? null : result.error,
  };
  const common = {
    attempts,
    last_status_code: result.statusCode,
    last_error: result.ok ? null : result.error,
    lease_until: null,
    updated_at: now.toISOString(),
    attempt_log: [...(delivery.attempt_log ?? []), logged].slice(-MAX_ATTEMPT_LOG),
  };
  if (result.ok) return { ...delivery, ...common, status: 'succeeded', next_attempt_at: null };
  const delay = result.final ? null : nextRetryDelay(schedule, attempts, random);
  if (delay === null) return { ...delivery, ...common, status: 'failed', next_attempt_at: null };
  return { ...delivery, ...common, status: 'pending', next_attempt_at: new Date(now.getTime() + delay).toISOString() };
}

/** The public view of a delivery (docs/api.md#webhooks-and-signatures). */
export const toDeliveryResource = (d: Delivery) => ({
  id: d.id,
  event_id: d.event_id,
  event: d.event,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.last_status_code,
  last_error: d.last_error,
  next_attempt_at: d.next_attempt_at,
  created_at: d.created_at,
});
