import { applyDecorators, Controller, Logger, UseFilters } from '@nestjs/common';
import { AroundHandler, BusContext, BusExceptionFilter } from '@campaign-ops/bus-transport';
import { withRequestId } from './request-context';

const logger = new Logger('bus');

/**
 * Every bus message handler runs under the request id it belongs to: the `X-Request-Id` header of
 * a request, or the `requestId` in a relayed event's metadata. Log lines then carry it, and at
 * debug level each handled message has its own line, as the gateway has one per HTTP request.
 * The bus transport runs it around every handler (start-app.ts).
 */
export const busRequestContext: AroundHandler = (run, data, context: BusContext) => {
  const headers = context.getHeaders();
  const metadata = (data as { metadata?: { requestId?: unknown } } | undefined)?.metadata;
  const requestId = headers['X-Request-Id'] ?? headers['x-request-id'] ?? (typeof metadata?.requestId === 'string' ? metadata.requestId : undefined);
  const started = Date.now();
  const handled = (outcome: 'ok' | 'error') =>
    logger.debug({
      msg: 'message',
      subject: context.getSubject(),
      outcome,
      duration_ms: Date.now() - started,
      ...(requestId ? { request_id: requestId } : {}),
    });
  return withRequestId(requestId, run).then(
    (value) => {
      handled('ok');
      return value;
    },
    (error: unknown) => {
      handled('error');
      throw error;
    },
  );
};

/**
 * A controller of bus messages (`@MessagePattern`, `@EventPattern`): its handlers hand their
 * errors back to the bus as they are (and run under their request id: busRequestContext). (On the
 * HTTP app's side of a hybrid app, global enhancers would also reach the HTTP routes; this filter
 * belongs to messages only.)
 */
export const MessageController = (): ClassDecorator => applyDecorators(Controller(), UseFilters(BusExceptionFilter));
