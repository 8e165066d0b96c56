/** API.md §5: about three days of retries. */
export const DEFAULT_RETRY_SCHEDULE = '5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,24h,24h';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `"5s,30s,2m"` → delays in ms between attempts. Throws a message naming the bad part. */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === '')) throw new Error('is empty or has an empty step');
  return parts.map((part) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(part);
    if (!match) throw new Error(`has a step "${part}" that is not a number with a unit (ms, s, m, h, d)`);
    const ms = Math.round(Number(match[1]) * UNIT_MS[match[2]]);
    if (ms <= 0) throw new Error(`has a step "${part}" that is not positive`);
    return ms;
  });
}

/**
 * The wait before the next attempt after `attemptsMade` failures, or null when the schedule is
 * spent. Jitter of up to ±10 % spreads retries of many deliveries that failed together.
 */
export function nextRetryDelay(schedule: readonly number[], attemptsMade: number, random: () => number = Math.random): number | null {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return null;
  return Math.max(1, Math.round(base * (0.9 + 0.2 * random())));
}
