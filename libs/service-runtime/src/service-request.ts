import { Bus, BusHeaders } from '@campaign-ops/bus';
import { currentRequestId } from './request-context';

export interface ServiceRequestOptions {
  /** How long to wait (the bus's default when not given). */
  timeoutMs?: number;
  /** The partner request's id; the one of the work in hand (withRequestId) when not given. */
  requestId?: string | null;
}

/**
 * The one way anything here asks a service over the bus (the gateway's ServiceClient, and one
 * service asking another; LocalServices when the service may be in this process): the partner
 * request's id goes along as `X-Request-Id`, so the answering service's log lines carry it too.
 */
export function requestService<T>(bus: Bus, subject: string, payload: object, options: ServiceRequestOptions = {}): Promise<T> {
  return bus.request<T>(subject, payload, { timeoutMs: options.timeoutMs, headers: requestIdHeader(options.requestId) });
}

/** `X-Request-Id`: the id given, else the one of the work in hand (withRequestId); none without either. */
export function requestIdHeader(requestId?: string | null): BusHeaders {
  const id = requestId ?? currentRequestId();
  return id ? { 'X-Request-Id': id } : {};
}
