import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { defer, mergeAll, Observable } from 'rxjs';
import { EnvelopeInterceptor } from './envelope.interceptor';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { UnknownQueryInterceptor } from './unknown-query.interceptor';

/**
 * The gateway's interceptors as the one global interceptor, in their order, outermost first: an
 * unknown query parameter is refused before anything; a replayed answer skips the envelope (it is
 * already enveloped). Nest wraps each global interceptor, for every request, in an rxjs chain and
 * an AsyncResource binding (two `util.deprecate` wrappers each on Node 20); chained here, a request
 * pays for one.
 */
@Injectable()
export class ApiInterceptors implements NestInterceptor {
  constructor(
    private readonly unknownQuery: UnknownQueryInterceptor,
    private readonly idempotency: IdempotencyInterceptor,
    private readonly envelope: EnvelopeInterceptor,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const enveloped: CallHandler = { handle: () => this.envelope.intercept(context, next) };
    const idempotent: CallHandler = { handle: () => defer(() => this.idempotency.intercept(context, enveloped)).pipe(mergeAll()) };
    return this.unknownQuery.intercept(context, idempotent);
  }
}
