import type { NextFunction, Response } from 'express';
import { ApiError } from '@campaign-ops/api-errors';
import { GatewayRequest } from './request-context';

export const MAX_BODY_BYTES = 64 * 1024;
const JSON_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/** A body's declared type the API takes: JSON, in UTF-8 if a charset is named. */
export const isJsonType = (type: string | undefined): boolean => type !== undefined && JSON_TYPE.test(type.trim());

/**
 * Reads and parses the body before any other work: over 64 KiB is 413, a body that is not
 * `application/json` is 415, JSON that does not parse is 400 `body_invalid_json`.
 */
export function jsonBodyMiddleware(request: GatewayRequest, _response: Response, next: NextFunction): void {
  // Read already by the launch's way in (LaunchFastPath), within the size limit: the same checks on the same bytes.
  if (request.rawBody !== undefined) return void next(acceptJsonBody(request, request.rawBody) ?? undefined);
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) return void next(new ApiError('payload_too_large', `The body is larger than ${MAX_BODY_BYTES} bytes.`));
  const chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  request.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      failed = true;
      request.resume();
      next(new ApiError('payload_too_large', `The body is larger than ${MAX_BODY_BYTES} bytes.`));
      return;
    }
    chunks.push(chunk);
  });
  request.on('error', (error) => {
    if (!failed) {
      failed = true;
      next(error);
    }
  });
  request.on('end', () => {
    if (failed) return;
    next(acceptJsonBody(request, Buffer.concat(chunks)) ?? undefined);
  });
}

/**
 * The body as read (at most MAX_BODY_BYTES): kept raw (an Idempotency-Key's fingerprint), and
 * parsed unless empty; the refusal if it is not JSON, or not a shape any validator may see.
 */
export function acceptJsonBody(request: Pick<GatewayRequest, 'headers' | 'rawBody' | 'body'>, raw: Buffer): ApiError | null {
  request.rawBody = raw;
  if (raw.length === 0) {
    request.body = undefined;
    return null;
  }
  if (!isJsonType(request.headers['content-type'])) return new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return new ApiError('body_invalid_json', 'The body is not valid JSON.');
  }
  const refused = shapeRefusal(body);
  if (refused) return refused;
  request.body = body;
  return null;
}

/** Deeper than any body of the API (a launch's deepest field is 3 levels down), and shallow enough for any validator's recursion. */
export const MAX_BODY_DEPTH = 16;
/**
 * Names that objects have without owning them: never a field of ours, and a trap for code that asks
 * `name in object`. With `prototype`, which Nest's ValidationPipe deletes (with `__proto__` and
 * `constructor`) before validating: a body holding it would pass as if it did not.
 */
const PROTOTYPE_NAMES = new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__', 'prototype']);

/**
 * Before any validator sees it: a body nested deeper than MAX_BODY_DEPTH is 400 `parameter_invalid`
 * (validators recurse, and 30,000 levels overflow their stack: a 500), and a field named like an
 * Object.prototype member (`constructor`, `valueOf`, `__proto__`) or `prototype` is 400
 * `parameter_unknown` whatever its place: validators that look fields up through the prototype take
 * those as known, and the ones they delete go unseen.
 * Walked without recursion, so the check itself cannot overflow.
 */
export function shapeRefusal(body: unknown): ApiError | null {
  // Every body is walked, so a field's path is made only for an error: each object waits with the
  // one it is in and its key, and nothing is kept of a string or a number.
  if (typeof body !== 'object' || body === null) return null;
  const pending: Nested[] = [{ value: body, key: '', parent: null, depth: 0 }];
  while (pending.length > 0) {
    const nested = pending.pop()!;
    const value = nested.value as Record<string, unknown>;
    if (nested.depth >= MAX_BODY_DEPTH) {
      const param = pathOf(nested) || 'body';
      return new ApiError('parameter_invalid', `${param} is nested deeper than ${MAX_BODY_DEPTH} levels; no field of this API is.`, param);
    }
    const isArray = Array.isArray(value);
    for (const key of Object.keys(value)) {
      if (!isArray && PROTOTYPE_NAMES.has(key)) {
        const at = nested.parent ? `${pathOf(nested)}.${key}` : key;
        return new ApiError('parameter_unknown', `${at} is not a known parameter`, at);
      }
      const inner = value[key];
      if (typeof inner === 'object' && inner !== null) pending.push({ value: inner, key, parent: nested, depth: nested.depth + 1 });
    }
  }
  return null;
}

/** An object or array of the body, with where it is. */
type Nested = { value: object; key: string; parent: Nested | null; depth: number };

/** Its path from the body: the keys, dot-separated (the body itself: ''). */
function pathOf(nested: Nested): string {
  const keys: string[] = [];
  for (let at: Nested | null = nested; at?.parent; at = at.parent) keys.push(at.key);
  return keys.reverse().join('.');
}
