import type { NextFunction, Response } from 'express';
import { newId } from '@campaign-ops/ids';
import { withRequestId } from '@campaign-ops/service-runtime';
import { AnswerHeaders, GatewayRequest } from './request-context';

const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Every answer carries `X-Request-Id`; a well-formed client id is kept (with the `req_` prefix). */
export function requestIdMiddleware(request: GatewayRequest, response: Response, next: NextFunction): void {
  // Named already when the launch's way in (LaunchFastPath) hands the request on.
  if (request.requestId === undefined) nameRequest(request, response);
  // Everything this request causes, here and (through the bus header) in the services, logs its id.
  withRequestId(request.requestId, () => next());
}

/** The request's id, from the client's `X-Request-Id` if well-formed, on the request and the answer. */
export function nameRequest(request: Pick<GatewayRequest, 'headers' | 'requestId'>, response: AnswerHeaders): string {
  const sent = request.headers['x-request-id'];
  request.requestId = typeof sent === 'string' && CLIENT_ID.test(sent) ? (sent.startsWith('req_') ? sent : `req_${sent}`) : newId('req');
  response.setHeader('X-Request-Id', request.requestId);
  return request.requestId;
}
