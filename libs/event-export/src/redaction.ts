import canonicalize from 'canonicalize';
import { CanonicalEvent, RecordedEvent } from '@campaign-ops/event-store';

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

/**
 * redactedData on canonical text (JCS), answering canonical text: the text itself when none of the
 * type's listed fields holds a value (the common case: a launch without Idempotency-Key), else
 * parsed, redacted and canonicalized again. The check reads the text: in JCS a `"<field>":` can only
 * be a key (a quote inside a string is escaped), and a key is followed by its value with nothing
 * between, so when each occurrence is followed by `null` no listed field has a value. An occurrence
 * elsewhere (another object's key of that name) only sends the event the slow way, never past it.
 */
export function redactedCanonicalData(event: Pick<CanonicalEvent, 'type' | 'data'>): string {
  const paths = byType.get(event.type);
  if (!paths || paths.every((path) => onlyNullAt(event.data, path[path.length - 1]))) return event.data;
  return canonicalize(redactedData({ type: event.type, data: JSON.parse(event.data) }))!;
}

/** Whether every `"<field>":` in the JSON text is followed by null (or there is none). */
function onlyNullAt(text: string, field: string): boolean {
  const key = `${JSON.stringify(field)}:`;
  for (let at = text.indexOf(key); at !== -1; at = text.indexOf(key, at + key.length)) {
    if (!text.startsWith('null', at + key.length)) return false;
  }
  return true;
}

function replaceAt(value: Record<string, unknown>, path: readonly string[]): Record<string, unknown> {
  const [field, ...rest] = path;
  if (!Object.hasOwn(value, field) || value[field] === null || value[field] === undefined) return value;
  const inner = value[field];
  if (rest.length === 0) return { ...value, [field]: REDACTED };
  if (typeof inner !== 'object' || Array.isArray(inner)) return value;
  return { ...value, [field]: replaceAt(inner as Record<string, unknown>, rest) };
}
