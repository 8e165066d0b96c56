import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiError } from '@campaign-ops/api-errors';
import type { Caller as ServiceCaller } from '@campaign-ops/service-messages';
import type { RateLimitDecision } from './rate-limit';

/** Who a request acts for: its account, mode and request id (what every service message carries). */
export type Caller = ServiceCaller;

/** Where headers of an answer go: express's response, or node's (the launch's way in before express). */
export interface AnswerHeaders {
  setHeader(name: string, value: string | number | readonly string[]): unknown;
}

/** What an answer is sent through: express's response, or node's with a `send` of express's (LaunchFastPath). */
export interface AnswerTarget extends AnswerHeaders {
  statusCode: number;
  getHeader(name: string): unknown;
  send(body: string): unknown;
}

/** What the edge learns about a request: its id always, its caller once authenticated. */
export interface GatewayRequest extends Request {
  requestId: string;
  caller?: Caller & { keyId: string };
  rawBody?: Buffer;
  /**
   * Set by the launch's way in before express (LaunchFastPath) when it hands a request on: the
   * rate limit it took, and a failure of the launch for the app's error handler to answer.
   */
  rateLimitTaken?: RateLimitDecision;
  launchFailure?: { error: unknown };
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
