import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work belongs to, carried through async calls in this process and, as
 * the `X-Request-Id` header or event metadata, across NATS to the next service, so every log
 * line of one partner request has the same `request_id` in every service.
 */
const storage = new AsyncLocalStorage<{ requestId: string }>();

export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;

export function withRequestId<T>(requestId: string | null | undefined, work: () => T): T {
  return requestId ? storage.run({ requestId }, work) : work();
}

/** Registers a bus responder whose work runs under the caller's request id (the `X-Request-Id` header). */
export function respondInRequestContext<Req>(
  bus: { respond<Q, R>(subject: string, handler: (data: Q, context: { headers: Record<string, string> }) => Promise<R>): Promise<void> },
  subject: string,
  handler: (request: Req) => Promise<unknown>,
): Promise<void> {
  return bus.respond<Req, unknown>(subject, (data, context) => withRequestId(context.headers['X-Request-Id'] ?? context.headers['x-request-id'], () => handler(data)));
}
