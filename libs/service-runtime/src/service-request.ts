import { Bus } from '@campaign-ops/bus';
import { currentRequestId } from './request-context';

/**
 * The one way anything here asks a service over the bus (the gateway's ServiceClient, and one
 * service asking another): the partner request's id goes along as `X-Request-Id`, so the
 * answering service's log lines carry it too: the id given, else the one of the work in hand
 * (withRequestId). `timeoutMs`: how long to wait (the bus's default when not given).
 */
export function requestService<T>(bus: Bus, subject: string, payload: object, options: { timeoutMs?: number; requestId?: string | null } = {}): Promise<T> {
  const requestId = options.requestId ?? currentRequestId();
  return bus.request<T>(subject, payload, { timeoutMs: options.timeoutMs, headers: requestId ? { 'X-Request-Id': requestId } : {} });
}
