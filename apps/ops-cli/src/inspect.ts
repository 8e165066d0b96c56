import { CONNECTION_STREAM_PREFIX } from '@campaign-ops/connection-domain';
import { DISPATCH_STREAM_PREFIX } from '@campaign-ops/dispatch-domain';
import { EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { publicEventId } from '@campaign-ops/ids';
import { ReadStore } from '@campaign-ops/read-store';
import { deliveriesOf } from '@campaign-ops/webhook-delivery';

export interface TimelineEntry {
  at: string;
  kind: 'event' | 'provider_attempt' | 'webhook_delivery' | 'webhook_attempt';
  what: string;
  request_id: string | null;
  details: Record<string, unknown>;
}

export interface Timeline {
  id: string;
  stream: string;
  /** The read model's view of it now (dispatches or connections), or null. */
  current: Record<string, unknown> | null;
  entries: TimelineEntry[];
}

const requestIdOf = (event: RecordedEvent) => (typeof event.metadata['requestId'] === 'string' ? (event.metadata['requestId'] as string) : null);

/** The provider calls a dispatch's events record: each try and how it ended. */
function providerAttempt(event: RecordedEvent): TimelineEntry | null {
  const data = event.data as {
    attempt?: number;
    error?: { code: string; provider_code: string | null; message: string };
    providerResourceId?: string;
    lookup?: boolean;
    reconciled?: boolean;
    warning?: string;
    outcomeUnknown?: boolean;
  };
  const base = { at: event.occurredAt, kind: 'provider_attempt' as const, request_id: requestIdOf(event) };
  const unknown = data.outcomeUnknown ? '; the network may have created the campaign: the next try looks first' : '';
  switch (event.type) {
    case 'DispatchAttemptStarted':
      return {
        ...base,
        what: `attempt ${data.attempt}: started${data.lookup ? ', looking for the campaign before creating one' : ''}`,
        details: { attempt: data.attempt, lookup: data.lookup },
      };
    case 'DispatchCompleted':
      return {
        ...base,
        what: `attempt ${data.attempt}: ${data.reconciled ? 'found the campaign an earlier try created (reconciled)' : 'succeeded'}${data.warning ? ` (warning: ${data.warning})` : ''}`,
        details: {
          attempt: data.attempt,
          provider_resource_id: data.providerResourceId,
          reconciled: data.reconciled === true,
          ...(data.warning ? { warning: data.warning } : {}),
        },
      };
    case 'DispatchAttemptFailed':
      return {
        ...base,
        what: `attempt ${data.attempt}: failed, to be retried (${data.error?.code}${unknown})`,
        details: { attempt: data.attempt, error: data.error, outcome_unknown: data.outcomeUnknown === true },
      };
    case 'DispatchFailed':
      return {
        ...base,
        what: `attempt ${data.attempt}: failed (${data.error?.code}${unknown})`,
        details: { attempt: data.attempt, error: data.error, outcome_unknown: data.outcomeUnknown === true },
      };
    default:
      return null;
  }
}

/**
 * One dispatch's or connection's story: every event of its stream (with the request that caused
 * it), the provider attempts they record, every webhook delivery made of them, and each attempt
 * of each delivery (when it started, how long it took, the status code or error; deliveries keep
 * their last 50 attempts, and those recorded before attempts were kept show only the summary).
 */
export async function inspect(eventStore: EventStore, readStore: ReadStore, id: string): Promise<Timeline | null> {
  const kind = id.startsWith('dsp_') ? 'dispatch' : id.startsWith('con_') ? 'connection' : null;
  if (!kind) throw new Error(`inspect takes a dispatch (dsp_…) or connection (con_…) id, not ${id}`);
  const stream = `${kind === 'dispatch' ? DISPATCH_STREAM_PREFIX : CONNECTION_STREAM_PREFIX}${id}`;
  const events = await eventStore.readStream(stream);
  if (events.length === 0) return null;
  const entries: TimelineEntry[] = [];
  const deliveries = deliveriesOf(readStore);
  for (const event of events) {
    const eventId = publicEventId(event.id);
    entries.push({
      at: event.occurredAt,
      kind: 'event',
      what: `${event.type} (revision ${event.revision})`,
      request_id: requestIdOf(event),
      details: { event_id: eventId, revision: event.revision, data: event.data },
    });
    const attempt = kind === 'dispatch' ? providerAttempt(event) : null;
    if (attempt) entries.push(attempt);
    for (const delivery of (await deliveries.find({ event_id: eventId }, { order: 'asc', limit: 100 })).items) {
      entries.push({
        at: delivery.created_at,
        kind: 'webhook_delivery',
        what: `${delivery.event} to ${delivery.endpoint_id}: ${delivery.status} after ${delivery.attempts} attempt(s)${delivery.last_status_code ? ` (last ${delivery.last_status_code})` : ''}`,
        request_id: requestIdOf(event),
        details: {
          delivery_id: delivery.id,
          endpoint_id: delivery.endpoint_id,
          event_id: delivery.event_id,
          status: delivery.status,
          attempts: delivery.attempts,
          last_status_code: delivery.last_status_code,
          last_error: delivery.last_error,
          last_attempt_at: delivery.attempts > 0 ? delivery.updated_at : null,
          next_attempt_at: delivery.next_attempt_at,
        },
      });
      for (const attempt of delivery.attempt_log ?? []) {
        const outcome = attempt.succeeded ? `succeeded (${attempt.status_code})` : `failed (${attempt.status_code ?? attempt.error})`;
        entries.push({
          at: attempt.at,
          kind: 'webhook_attempt',
          what: `${delivery.event} to ${delivery.endpoint_id}, attempt ${attempt.attempt}: ${outcome}${attempt.duration_ms === null ? '' : ` in ${attempt.duration_ms} ms`}`,
          request_id: requestIdOf(event),
          details: { delivery_id: delivery.id, ...attempt },
        });
      }
    }
  }
  // Stable: at equal times, the order above (the event, then what came of it).
  entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const current = await readStore.collection(kind === 'dispatch' ? 'dispatches' : 'connections').get(id);
  return { id, stream, current, entries };
}

export function timelineText(timeline: Timeline): string {
  const current = timeline.current ? ` (now ${String(timeline.current['status'])})` : '';
  const lines = [`${timeline.stream}${current}`];
  for (const entry of timeline.entries) {
    lines.push(`${entry.at}  ${entry.kind.padEnd(16)}  ${entry.what}${entry.request_id ? `  request ${entry.request_id}` : ''}`);
  }
  return lines.join('\n');
}
