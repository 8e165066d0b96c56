import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor, SetMetadata } from '@nestjs/common';
import type { Response } from 'express';
import { Observable, of } from 'rxjs';
import { ApiError } from '@campaign-ops/api-errors';
import { IdempotencyStore, isReplayableAnswer, requestFingerprint, Reservation, StoredAnswer } from './idempotency';
import { GatewayRequest } from './request-context';
import { parseIdempotencyKey } from './validation';

/** Whose keys these are: a partner's account in one mode, or the operators of the Admin API. */
export function idempotencyScope(request: GatewayRequest): string | null {
  if (request.caller) return `${request.caller.accountId}:${request.caller.mode}`;
  if (request.path.startsWith('/admin/')) return 'admin';
  return null;
}

const IGNORES_IDEMPOTENCY_KEY = 'campaign-ops:ignores-idempotency-key';
/** A POST that changes nothing (the dry run): its `Idempotency-Key` is accepted and ignored (docs/api.md#dispatches-and-retries). */
export const IgnoresIdempotencyKey = () => SetMetadata(IGNORES_IDEMPOTENCY_KEY, true);

/**
 * `Idempotency-Key` on every POST (docs/api.md#dispatches-and-retries) but those marked `@IgnoresIdempotencyKey()`. Runs after the guards, so the scope (account and
 * mode, or admin) is known, and after the rate limit, so a 429 never touches the store.
 *
 * The first request with a key reserves it and runs; its final answer (status, body string and
 * content type, as the envelope interceptor or the exception filter produced it) is captured at
 * `response.send` and kept before it is sent, so a retry that arrives right after the answer
 * already finds it. Success and business outcomes (402, 409, 422) are kept; any other error
 * releases the key, so the client can fix the request and send it again with the same key.
 *
 * Must be registered before EnvelopeInterceptor (outermost): a replay does not run the handler.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('idempotency');

  constructor(private readonly store: IdempotencyStore) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() !== 'http' || Reflect.getMetadata(IGNORES_IDEMPOTENCY_KEY, context.getHandler()) === true) return next.handle();
    const response = context.switchToHttp().getResponse<Response>();
    const kept = await this.admit(context.switchToHttp().getRequest<GatewayRequest>(), response);
    if (!kept) return next.handle();
    // Nest replies with the route's own status and the value below; the kept status and body stand.
    const send = response.send;
    response.send = ((_body?: unknown) => {
      response.send = send;
      return IdempotencyInterceptor.replay(response, kept);
    }) as Response['send'];
    return of(null);
  }

  /**
   * A POST's `Idempotency-Key`, before the request runs: 409 `idempotency_key_reused` or
   * `_in_use`; the kept answer of an earlier run, to replay; or null, to run (its answer then
   * kept or the key released as it is sent). Without a key, or a scope, null.
   */
  async admit(request: GatewayRequest, response: Response): Promise<StoredAnswer | null> {
    if (request.method !== 'POST') return null;
    const key = parseIdempotencyKey(request.headers['idempotency-key'] as string | undefined);
    const scope = idempotencyScope(request);
    if (key === null || scope === null) return null;

    const begun = await this.store.begin(scope, key, requestFingerprint(request.method, request.originalUrl, request.rawBody));
    switch (begun.kind) {
      case 'reused':
        throw new ApiError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request; send a new key for a new request.',
          'Idempotency-Key',
        );
      case 'in_use':
        throw new ApiError(
          'idempotency_key_in_use',
          'A request with this Idempotency-Key is still in progress; retry once it has finished.',
          'Idempotency-Key',
        );
      case 'replay':
        return begun.answer;
      case 'run':
        this.capture(request, response, begun.reservation);
        return null;
    }
  }

  /** The kept answer, byte for byte, with `Idempotent-Replayed: true` and the original request id. */
  static replay(response: Response, answer: StoredAnswer): Response {
    response.setHeader('Content-Type', answer.contentType);
    response.setHeader('Idempotent-Replayed', 'true');
    response.setHeader('X-Request-Id', answer.requestId);
    response.statusCode = answer.status;
    return response.send(answer.body);
  }

  /** Keeps (or releases) the reservation with the answer, before the answer leaves. */
  private capture(request: GatewayRequest, response: Response, reservation: Reservation): void {
    const send = response.send;
    response.send = ((body?: unknown) => {
      response.send = send;
      const status = response.statusCode;
      const text = typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('utf8') : null;
      const settle =
        text !== null && isReplayableAnswer(status, text)
          ? this.store.complete(reservation, {
              status,
              contentType: String(response.getHeader('Content-Type') ?? 'application/json; charset=utf-8'),
              body: text,
              requestId: request.requestId,
            })
          : this.store.release(reservation);
      settle
        .catch((error: Error) =>
          this.logger.error(JSON.stringify({ msg: 'idempotency record not written', request_id: request.requestId, error: error.message })),
        )
        .finally(() => send.call(response, body));
      return response;
    }) as Response['send'];
    // No answer at all (the client went away before it): the reservation is kept until its lease
    // runs out, because the request may still be running and a retry must not run it twice.
  }
}
