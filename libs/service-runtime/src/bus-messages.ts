import { ArgumentsHost, CallHandler, Catch, ExecutionContext, Injectable, NestInterceptor, RpcExceptionFilter } from '@nestjs/common';
import { Observable, throwError } from 'rxjs';
import type { BusContext } from '@campaign-ops/bus-transport';
import { withRequestId } from './request-context';

/**
 * Every bus message handler runs under the request id it belongs to: the `X-Request-Id` header of
 * a request, or the `requestId` in a relayed event's metadata. Log lines then carry it.
 */
@Injectable()
export class BusRequestContextInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'rpc') return next.handle();
    const rpc = context.switchToRpc();
    const headers = rpc.getContext<BusContext>().getHeaders();
    const metadata = (rpc.getData() as { metadata?: { requestId?: unknown } } | undefined)?.metadata;
    const requestId = headers['X-Request-Id'] ?? headers['x-request-id'] ?? (typeof metadata?.requestId === 'string' ? metadata.requestId : undefined);
    return new Observable((subscriber) => withRequestId(requestId, () => next.handle().subscribe(subscriber)));
  }
}

/**
 * A failing handler's error goes back to the bus as it is: a request's caller gets its message
 * (BusRemoteError), a durable message is redelivered. NestJS's default would replace the message
 * with "Internal server error".
 */
@Catch()
export class BusExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}
