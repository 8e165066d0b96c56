import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { ApiError } from '@campaign-ops/api-errors';

/**
 * A query parameter a route does not take is refused, as an unknown body field is: 400
 * `parameter_unknown` naming it. Routes that take a query (`@Query()`: the lists, validated by
 * their DTOs, and the OAuth callback, which takes whatever the provider adds) judge theirs
 * themselves; on every other route (reads, POSTs, DELETEs) any query parameter is unknown. Runs
 * after the guards, so an unauthenticated request is still a 401 first.
 */
@Injectable()
export class UnknownQueryInterceptor implements NestInterceptor {
  private readonly takesQuery = new WeakMap<object, boolean>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http' && !this.takes(context)) {
      const first = Object.keys(context.switchToHttp().getRequest<Request>().query ?? {})[0];
      if (first !== undefined) throw new ApiError('parameter_unknown', `${first} is not a known parameter`, first);
    }
    return next.handle();
  }

  private takes(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let takes = this.takesQuery.get(handler);
    if (takes === undefined) {
      const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) ?? {}) as Record<string, unknown>;
      takes = Object.keys(args).some((key) => key.split(':')[0] === String(RouteParamtypes.QUERY));
      this.takesQuery.set(handler, takes);
    }
    return takes;
  }
}
