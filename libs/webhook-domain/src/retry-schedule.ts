import { parseDurationList } from '@campaign-ops/durations';

/** docs/api.md#webhooks-and-signatures: about three days of retries. */
export const DEFAULT_RETRY_SCHEDULE = '5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,24h,24h';

/** `"5s,30s,2m"` → delays in ms between attempts. Throws a message naming the bad part. */
export const parseRetrySchedule = (text: string): number[] => parseDurationList(text);

/**
 * The wait before the next attempt after `attemptsMade` failures, or null when the schedule is
 * spent. Jitter of up to ±10 % spreads retries of many deliveries that failed together.
 */
export function nextRetryDelay(schedule: readonly number[], attemptsMade: number, random: () => number = Math.random): number | null {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return null;
  return Math.max(1, Math.round(base * (0.9 + 0.2 * random())));
}
