const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 60_000;

/**
 * Delay before redelivering a message whose handler threw: 1 s, 2 s, 4 s, … capped at 60 s,
 * so a failing dependency is not hammered. `deliveryCount` is that of the failed delivery (1 on the first).
 */
export function backoffAfterFailureMs(deliveryCount: number): number {
  const exponent = Math.min(Math.max(deliveryCount, 1) - 1, 16);
  return Math.min(FIRST_RETRY_MS * 2 ** exponent, MAX_RETRY_MS);
}
