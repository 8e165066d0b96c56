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

/**
 * Keeps a delivery while its handler runs (ConsumerOptions.maxHandlingMs): `renew` every third of
 * ackWaitMs until `maxHandlingMs` after the delivery, then no more. Answers the function that
 * stops it, called when the handler settles. Nothing is renewed without a maxHandlingMs above ackWaitMs.
 */
export function keepWhileHandling(ackWaitMs: number, maxHandlingMs: number | undefined, renew: () => void): () => void {
  if (maxHandlingMs === undefined || maxHandlingMs <= ackWaitMs) return () => undefined;
  const until = Date.now() + maxHandlingMs - ackWaitMs;
  const timer = setInterval(
    () => {
      if (Date.now() > until) return clearInterval(timer);
      renew();
    },
    Math.max(1, Math.floor(ackWaitMs / 3)),
  );
  timer.unref();
  return () => clearInterval(timer);
}
