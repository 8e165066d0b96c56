const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `"5s,30s,2m"` → the durations in ms. Throws a message naming the bad part. Shared by the webhook
 * retry schedule (webhook-domain) and the single durations of the services' configuration.
 */
export function parseDurationList(text: string): number[] {
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
