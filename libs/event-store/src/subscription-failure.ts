/**
 * Hands a stopped subscription's error to its `onError`. Without one (or if it throws), the error
 * is rethrown outside, like an 'error' event nobody listens to: a projection must not stop silently.
 */
export function reportSubscriptionFailure(onError: ((error: Error) => void) | undefined, cause: unknown): void {
  const error = cause instanceof Error ? cause : new Error(String(cause));
  try {
    if (!onError) throw error;
    onError(error);
  } catch (unreported) {
    queueMicrotask(() => {
      throw unreported;
    });
  }
}
