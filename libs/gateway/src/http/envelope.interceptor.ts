import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { map, Observable } from 'rxjs';
import { GatewayRequest, ListPage } from './request-context';

/** Wraps every successful answer in the envelope: `{success, data, request_id}` (+ `has_more` for lists). */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<GatewayRequest>();
    return next.handle().pipe(map((result) => enveloped(result, request.requestId)));
  }
}

/** A successful answer in the envelope (`has_more` for a list page): the one shape of every route's, and LaunchRoute's. */
export function enveloped(result: unknown, requestId: string): object {
  return result instanceof ListPage
    ? { success: true, data: result.data, has_more: result.hasMore, request_id: requestId }
    : { success: true, data: result, request_id: requestId };
}
