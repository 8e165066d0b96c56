import type { NextFunction, Response } from 'express';
import { newId } from '@campaign-ops/ids';
import { withRequestId } from '@campaign-ops/service-runtime';
import { GatewayRequest } from './request-context';

const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Every answer carries `X-Request-Id`; a well-formed client id is kept (with the `req_` prefix). */
export function requestIdMiddleware(request: GatewayRequest, response: Response, next: NextFunction): void {
  const sent = request.header('X-Request-Id');
  request.requestId = sent && CLIENT_ID.test(sent) ? (sent.startsWith('req_') ? sent : `req_${sent}`) : newId('req');
  response.setHeader('X-Request-Id', request.requestId);
  // Everything this request causes, here and (through the bus header) in the services, logs its id.
  withRequestId(request.requestId, () => next());
}
