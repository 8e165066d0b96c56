// Calls to EventStoreDB with deadlines of their own (the client sets its deadlines to Infinity),
// and the conversions between the client's events and revisions and the port's.
import { ANY, AppendExpectedRevision, NO_STREAM, RecordedEvent as EsdbRecordedEvent, STREAM_EXISTS, WrongExpectedVersionError } from '@eventstore/db-client';
import { ExpectedRevision, RecordedEvent } from './event-store.port';
import { encodePosition, isUnknownPosition } from './esdb-position';
import { EventStoreTimeoutError, UndeliverableEventError } from './eventstoredb-errors';

/** A read as the client returns it: resolved events, and a way to cancel the gRPC call. */
export type ClientRead<Resolved> = AsyncIterable<Resolved> & { cancel(): Promise<void> };

/**
 * Iterates a read, giving each resolved event to `take` until it returns true or the read ends.
 * The client overrides every read's deadline with Infinity, so this keeps its own: if the server
 * sends nothing for `timeoutMs` (since `since`, by default now, or with `idle` since the last
 * event), it gives up with EventStoreTimeoutError. Either way the gRPC call is cancelled at the
 * end, so a node that stopped answering is not left holding reads.
 */
export async function consumeRead<Resolved>(
  read: ClientRead<Resolved>,
  take: (resolved: Resolved) => boolean | void,
  { operation, timeoutMs, since = Date.now(), idle = false }: { operation: string; timeoutMs: number; since?: number; idle?: boolean },
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let giveUp: (error: Error) => void = () => undefined;
  const timedOut = new Promise<never>((_, reject) => (giveUp = reject));
  const arm = (from: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => giveUp(new EventStoreTimeoutError(operation, timeoutMs)), Math.max(0, from + timeoutMs - Date.now()));
  };
  const iterator = read[Symbol.asyncIterator]();
  arm(since);
  try {
    for (;;) {
      const next = iterator.next();
      // Once given up on, this may still settle (or never): either way nobody waits for it.
      next.catch(() => undefined);
      const result = await Promise.race([next, timedOut]);
      if (result.done) return;
      if (take(result.value) === true) return;
      if (idle) arm(Date.now());
    }
  } finally {
    clearTimeout(timer);
    read.cancel().catch(() => undefined);
    Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
}

/** The call's outcome, or EventStoreTimeoutError once `timeoutMs` has passed without one (the call itself is left to settle unobserved). */
export function withDeadline<T>(call: Promise<T>, { operation, timeoutMs }: { operation: string; timeoutMs: number }): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  call.catch(() => undefined);
  return Promise.race([
    call,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new EventStoreTimeoutError(operation, timeoutMs)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}

export function toEsdbExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
}

/** The client reports an absent stream as `no_stream`, or as -1 when it comes from error metadata. */
export function toActualRevision(actual: WrongExpectedVersionError['actualVersion']): number | 'no_stream' {
  return typeof actual === 'bigint' && actual >= 0n ? Number(actual) : 'no_stream';
}

export function toRevisionNumber(streamId: string, revision: bigint): number {
  const value = Number(revision);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`stream ${streamId}: revision ${revision} out of range`);
  return value;
}

/** System streams and events (`$`-prefixed) are never delivered; nor, with prefixes, other streams. */
export function isDeliverable(streamId: string, type: string, prefixes: string[] | undefined): boolean {
  if (streamId.startsWith('$') || type.startsWith('$')) return false;
  return prefixes === undefined || prefixes.some((prefix) => streamId.startsWith(prefix));
}

export function toRecordedEvent(event: EsdbRecordedEvent): RecordedEvent {
  if (!event.isJson || !isJsonObject(event.data)) {
    throw new UndeliverableEventError(event.streamId, event.revision, 'its data is not a JSON object');
  }
  const metadata = event.metadata === undefined ? {} : event.metadata;
  if (!isJsonObject(metadata)) {
    throw new UndeliverableEventError(event.streamId, event.revision, 'its metadata is not a JSON object');
  }
  if (isUnknownPosition(event.position)) {
    // Stream reads carry positions from EventStoreDB 22.6 on (not for events of explicit transactions).
    throw new UndeliverableEventError(event.streamId, event.revision, 'the server did not report its position');
  }
  return {
    id: event.id,
    streamId: event.streamId,
    type: event.type,
    revision: toRevisionNumber(event.streamId, event.revision),
    position: encodePosition(event.position!),
    data: event.data,
    metadata,
    occurredAt: event.created.toISOString(),
  };
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
