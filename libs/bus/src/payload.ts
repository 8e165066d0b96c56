/**
 * Payloads travel as JSON in both adapters, so a caller never shares a mutable object with
 * the other side. `undefined` (a void request or reply) travels as the empty string.
 */
export function encodePayload(value: unknown): string {
  return value === undefined ? '' : JSON.stringify(value);
}

export function decodePayload<T>(text: string): T {
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** What a failure is reported as across the bus: the message, never the stack. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
