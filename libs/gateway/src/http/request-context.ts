import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiError } from '@campaign-ops/api-errors';
import type { Caller as ServiceCaller } from '@campaign-ops/service-messages';

/** Who a request acts for: its account, mode and request id (what every service message carries). */
export type Caller = ServiceCaller;

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

/** The authenticated caller of a route behind ApiKeyGuard, as a handler's parameter: `@Caller() caller: Caller`. */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller =>
  callerOf(context.switchToHttp().getRequest<GatewayRequest>()),
);

/** A list answer: the envelope adds `has_more`. */
export class ListPage<T> {
  constructor(
    readonly data: T[],
    readonly hasMore: boolean,
  ) {}
}
