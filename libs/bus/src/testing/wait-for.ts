/** Polls `condition` (sync or async) every 10 ms until it holds, or fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, description: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise a test settles from outside, e.g. to hold a handler in flight and release it later. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** Retries `attempt` until it resolves (e.g. while a client reconnects); fails with its last error after `timeoutMs`. */
export async function eventually<T>(attempt: () => Promise<T>, description: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}: ${String(error)}`);
      await sleep(100);
    }
  }
}
