import { Injectable, Logger } from '@nestjs/common';
import type { NextFunction, Response } from 'express';
import { AccountDirectory } from '@campaign-ops/accounts';
import { CreateCampaignDto } from '@campaign-ops/api-contract';
import { launch } from '../controllers/campaigns.http.controller';
import { admitPartner } from './auth.guards';
import { Acceptor, compileAcceptor } from './compiled-validation';
import { enveloped } from './envelope.interceptor';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { AnswerTarget, callerOf, GatewayRequest } from './request-context';
import { ServiceClient } from './service-client';

export const LAUNCH = '/v1/campaigns';
/** What express's `response.json` answers with. */
export const JSON_UTF8 = 'application/json; charset=utf-8';

/**
 * `POST /v1/campaigns` with a body its rules accept: every launch's way in, answered here, after
 * the request id, rate limit and body middleware, without Nest's router, its guard, interceptor
 * and pipe chains, or class-transformer's copy of the body. The steps are the route's own, in its
 * order (ApiKeyGuard's check, then `Idempotency-Key`, then the launch, in the envelope), and a
 * failure goes to the app's error handler, ApiExceptionFilter, as the route's does.
 *
 * Anything else takes the route: a body the compiled rules do not accept (so ApiValidationPipe
 * words its error), a query string (refused as unknown there), another spelling of the path.
 */
@Injectable()
export class LaunchRoute {
  private readonly accepts: Acceptor | null;

  constructor(
    private readonly directory: AccountDirectory,
    private readonly idempotency: IdempotencyInterceptor,
    private readonly services: ServiceClient,
  ) {
    const compiled = compileAcceptor(CreateCampaignDto);
    this.accepts = 'accepts' in compiled ? compiled.accepts : null;
    // A rule the check does not model turns the shortcut off: said once, at start, for whoever wonders why launches got slower.
    if ('notCompilable' in compiled) new Logger('launch-route').warn(`every launch takes the Nest route: ${compiled.notCompilable}`);
  }

  /** The express middleware (bound, for `app.use`). */
  readonly handle = (request: GatewayRequest, response: Response, next: NextFunction): void => {
    // A launch the way in before express (LaunchFastPath) began and could not finish: the app's error handler answers it.
    if (request.launchFailure) return next(request.launchFailure.error);
    if (request.method !== 'POST' || request.url !== LAUNCH || !this.acceptsBody(request.body)) return next();
    this.answer(request, response).catch(next);
  };

  /** Whether the compiled rules accept this body (else the Nest route words the refusal). */
  acceptsBody(body: unknown): boolean {
    return this.accepts?.(body) === true;
  }

  /**
   * The launch of an accepted body: the key, then `Idempotency-Key`, then the launch, answered in
   * the envelope through `response.send` (which the idempotency store's capture wraps).
   */
  async answer(request: GatewayRequest, response: AnswerTarget): Promise<void> {
    await admitPartner(this.directory, request);
    const kept = await this.idempotency.admit(request, response as Response);
    if (kept) {
      IdempotencyInterceptor.replay(response as Response, kept);
      return;
    }
    const dispatch = await launch(
      this.services,
      callerOf(request),
      request.body as CreateCampaignDto,
      request.headers['idempotency-key'] as string | undefined,
    );
    response.statusCode = 200;
    response.setHeader('Content-Type', JSON_UTF8);
    response.send(JSON.stringify(enveloped(dispatch, request.requestId)));
  }
}
