import { RecordedEvent } from '@campaign-ops/event-store';

/** What stands in an export for a value that never leaves the event store. */
export const REDACTED = '[redacted]';

/**
 * The fields of event data an export never carries, by event type. Connection events carry no
 * tokens (those live sealed in the token vault, see connection.decider.ts), so none is listed;
 * everything an export leaves out is here, and only here.
 */
export const REDACTED_FIELDS: ReadonlyArray<{ type: string; path: readonly string[]; why: string }> = [
  { type: 'WebhookEndpointCreated', path: ['sealedSecret'], why: "the endpoint's signing secret (sealed, but with a key the service holds)" },
  { type: 'WebhookSecretRotated', path: ['sealedSecret'], why: "the endpoint's new signing secret" },
  { type: 'ApiKeyIssued', path: ['keyHash'], why: 'the SHA-256 the gateway looks API keys up by' },
  { type: 'DispatchAccepted', path: ['idempotencyKey'], why: "the partner's Idempotency-Key: kept answers are sealed with a key derived from it" },
  { type: 'DispatchCharged', path: ['dispatch', 'idempotencyKey'], why: 'the same Idempotency-Key, in the charge' },
];

const byType = new Map<string, Array<readonly string[]>>();
for (const { type, path } of REDACTED_FIELDS) byType.set(type, [...(byType.get(type) ?? []), path]);

/** The event's data as an export shows it: the listed fields replaced by REDACTED (a copy; the event is left alone). */
export function redactedData(event: Pick<RecordedEvent, 'type' | 'data'>): Record<string, unknown> {
  const paths = byType.get(event.type);
  if (!paths) return event.data;
  let data = event.data;
  for (const path of paths) data = replaceAt(data, path);
  return data;
}

function replaceAt(value: Record<string, unknown>, path: readonly string[]): Record<string, unknown> {
  const [field, ...rest] = path;
  if (!Object.hasOwn(value, field) || value[field] === null || value[field] === undefined) return value;
  const inner = value[field];
  if (rest.length === 0) return { ...value, [field]: REDACTED };
  if (typeof inner !== 'object' || Array.isArray(inner)) return value;
  return { ...value, [field]: replaceAt(inner as Record<string, unknown>, rest) };
}
