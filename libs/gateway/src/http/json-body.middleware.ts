import type { NextFunction, Response } from 'express';
import { ApiError } from '@campaign-ops/api-errors';
import { GatewayRequest } from './request-context';

export const MAX_BODY_BYTES = 64 * 1024;
const JSON_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * Reads and parses the body before any other work: over 64 KiB is 413, a body that is not
 * `application/json` is 415, JSON that does not parse is 400 `body_invalid_json`.
 */
export function jsonBodyMiddleware(request: GatewayRequest, _response: Response, next: NextFunction): void {
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
    const raw = Buffer.concat(chunks);
    request.rawBody = raw;
    if (raw.length === 0) {
      request.body = undefined;
      return next();
    }
    const type = request.headers['content-type'];
    if (!type || !JSON_TYPE.test(type.trim())) return next(new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.'));
    try {
      request.body = JSON.parse(raw.toString('utf8'));
      next();
    } catch {
      next(new ApiError('body_invalid_json', 'The body is not valid JSON.'));
    }
  });
}
