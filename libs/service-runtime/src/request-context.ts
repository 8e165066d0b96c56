import { ContextKey } from '@campaign-ops/async-context';

/**
 * The request a piece of work belongs to, carried through async calls in this process and, as
 * the `X-Request-Id` header or event metadata, across NATS to the next service, so every log
 * line of one partner request has the same `request_id` in every service.
 */
const requestContext = new ContextKey<string>('request id');

export const currentRequestId = (): string | undefined => requestContext.get();

export function withRequestId<T>(requestId: string | null | undefined, work: () => T): T {
  return requestId ? requestContext.run(requestId, work) : work();
}
