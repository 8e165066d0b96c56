// How this adapter's messages carry bus headers over NATS: user headers in and out, the headers a
// parked or replayed message gets, a stored parked message read back, and NATS errors as bus errors.
import { ErrorCode, headers as natsHeaders, MsgHdrs, NatsError, StoredMsg } from 'nats';
import { BusHeaders, BusTimeoutError, BusUnavailableError, ParkedMessage } from './bus.port';
import { decodePayload } from './payload';
import { PARKED_SUBJECT_ROOT } from './nats-permissions';

// Headers of a parked message (beside those it was published with): where it came from and why it stopped.
export const PARKED_SUBJECT_HEADER = 'Campaign-Ops-Parked-Subject';
export const PARKED_DURABLE_HEADER = 'Campaign-Ops-Parked-Durable';
export const PARKED_DELIVERY_COUNT_HEADER = 'Campaign-Ops-Parked-Delivery-Count';
export const PARKED_REASON_HEADER = 'Campaign-Ops-Parked-Reason';
export const PARKED_AT_HEADER = 'Campaign-Ops-Parked-At';
// On a replayed message: the only durable that handles it (see NatsConsumer.handle).
export const REPLAY_FOR_HEADER = 'Campaign-Ops-Replay-For';
export const INTERNAL_HEADERS = new Set(
  [PARKED_SUBJECT_HEADER, PARKED_DURABLE_HEADER, PARKED_DELIVERY_COUNT_HEADER, PARKED_REASON_HEADER, PARKED_AT_HEADER, REPLAY_FOR_HEADER].map((name) =>
    name.toLowerCase(),
  ),
);

/** A message to park: the original's stream sequence, subject, payload and headers. */
export interface ToPark {
  durable: string;
  streamSeq: number;
  subject: string;
  data: Uint8Array;
  headers: MsgHdrs | undefined;
  deliveryCount: number;
  reason: string;
}

export const encoder = new TextEncoder();
export const decoder = new TextDecoder();

export function jsErrorCode(error: unknown): number | undefined {
  return error instanceof NatsError ? error.api_error?.err_code : undefined;
}

export function toBusError(subject: string, error: unknown): Error {
  if (!(error instanceof NatsError)) return error instanceof Error ? error : new Error(String(error));
  switch (error.code) {
    case ErrorCode.Timeout:
      return new BusTimeoutError(subject);
    case ErrorCode.NoResponders:
      return new BusUnavailableError(subject, 'no responders');
    case ErrorCode.ConnectionClosed:
    case ErrorCode.ConnectionDraining:
    case ErrorCode.Disconnect:
      return new BusUnavailableError(subject, error.message);
    default:
      return error;
  }
}

export function toNatsHeaders(headers: BusHeaders | undefined): MsgHdrs | undefined {
  if (!headers || Object.keys(headers).length === 0) return undefined;
  const result = natsHeaders();
  for (const [name, value] of Object.entries(headers)) result.set(name, value);
  return result;
}

/**
 * The headers the message was published with. `Nats-*` headers (e.g. `Nats-Msg-Id`) belong to NATS,
 * and the parking and replay headers to this adapter: hidden like the in-process bus does.
 */
export function userHeaders(headers: MsgHdrs | undefined): BusHeaders {
  const result: BusHeaders = {};
  for (const name of headers?.keys() ?? []) {
    const lower = name.toLowerCase();
    if (!lower.startsWith('nats-') && !INTERNAL_HEADERS.has(lower)) result[name] = headers!.get(name);
  }
  return result;
}

export function toParkedMessage(stored: StoredMsg): ParkedMessage {
  const header = (name: string) => stored.header?.get(name) ?? '';
  return {
    id: String(stored.seq),
    // Also in the subject (`parked.<durable>`); the header is what parking wrote.
    durable: header(PARKED_DURABLE_HEADER) || stored.subject.slice(PARKED_SUBJECT_ROOT.length + 1),
    subject: header(PARKED_SUBJECT_HEADER),
    data: decodePayload(decoder.decode(stored.data)),
    headers: userHeaders(stored.header),
    deliveryCount: Number(header(PARKED_DELIVERY_COUNT_HEADER)) || 0,
    parkedAt: header(PARKED_AT_HEADER) || stored.time.toISOString(),
    reason: header(PARKED_REASON_HEADER),
  };
}
