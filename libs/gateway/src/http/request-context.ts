import type { Request } from 'express';
import { ApiError } from '@campaign-ops/api-errors';
import { Caller } from '@campaign-ops/service-messages';

/** What the edge learns about a request: its id always, its caller once authenticated. */
export interface GatewayRequest extends Request {
  requestId: string;
  caller?: Caller & { keyId: string };
  rawBody?: Buffer;
}

export function callerOf(request: GatewayRequest): Caller {
  if (!request.caller) throw new ApiError('api_key_missing', 'No API key was sent.');
  const { accountId, mode, requestId } = request.caller;
  return { accountId, mode, requestId };
}

/** A list answer: the envelope adds `has_more`. */
export class ListPage<T> {
  constructor(
    readonly data: T[],
    readonly hasMore: boolean,
  ) {}
}
