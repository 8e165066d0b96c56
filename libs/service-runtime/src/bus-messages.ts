import { applyDecorators, CallHandler, Controller, ExecutionContext, Injectable, Logger, NestInterceptor, UseFilters, UseInterceptors } from '@nestjs/common';
import { Observable, tap } from 'rxjs';
import { BusContext, BusExceptionFilter } from '@campaign-ops/bus-transport';
import { withRequestId } from './request-context';

/**
 * Every bus message handler runs under the request id it belongs to: the `X-Request-Id` header of
 * a request, or the `requestId` in a relayed event's metadata. Log lines then carry it, and at
 * debug level each handled message has its own line, as the gateway has one per HTTP request.
 */
@Injectable()
export class BusRequestContextInterceptor implements NestInterceptor {
  private readonly logger = new Logger('bus');

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'rpc') return next.handle();
    const rpc = context.switchToRpc();
    const bus = rpc.getContext<BusContext>();
    const headers = bus.getHeaders();
    const metadata = (rpc.getData() as { metadata?: { requestId?: unknown } } | undefined)?.metadata;
    const requestId = headers['X-Request-Id'] ?? headers['x-request-id'] ?? (typeof metadata?.requestId === 'string' ? metadata.requestId : undefined);
    const started = Date.now();
    const handled = (outcome: 'ok' | 'error') =>
      this.logger.debug({
        msg: 'message',
        subject: bus.getSubject(),
        outcome,
        duration_ms: Date.now() - started,
        ...(requestId ? { request_id: requestId } : {}),
      });
    return new Observable((subscriber) =>
      withRequestId(requestId, () =>
        next
          .handle()
          .pipe(tap({ complete: () => handled('ok'), error: () => handled('error') }))
          .subscribe(subscriber),
      ),
    );
  }
}

/**
 * A controller of bus messages (`@MessagePattern`, `@EventPattern`): its handlers run under their
 * request id and hand their errors back to the bus as they are. (On the HTTP app's side of a hybrid
 * app, global enhancers would also reach the HTTP routes; these belong to messages only.)
 */
export const MessageController = (): ClassDecorator =>
  applyDecorators(Controller(), UseInterceptors(BusRequestContextInterceptor), UseFilters(BusExceptionFilter));
