import { Injectable, Logger } from '@nestjs/common';
import type { NextFunction, Response } from 'express';
import { AccountDirectory } from '@campaign-ops/accounts';
import { CreateCampaignDto } from '@campaign-ops/api-contract';
import { launch } from '../controllers/campaigns.http.controller';
import { admitPartner } from './auth.guards';
import { Acceptor, compileAcceptor } from './compiled-validation';
import { enveloped } from './envelope.interceptor';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { callerOf, GatewayRequest } from './request-context';
import { ServiceClient } from './service-client';

const LAUNCH = '/v1/campaigns';

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
    if (request.method !== 'POST' || request.url !== LAUNCH || !this.accepts?.(request.body)) return next();
    this.answer(request, response).catch(next);
  };

  private async answer(request: GatewayRequest, response: Response): Promise<void> {
    await admitPartner(this.directory, request);
    const kept = await this.idempotency.admit(request, response);
    if (kept) {
      IdempotencyInterceptor.replay(response, kept);
      return;
    }
    const dispatch = await launch(this.services, callerOf(request), request.body as CreateCampaignDto, request.header('Idempotency-Key'));
    response.status(200).json(enveloped(dispatch, request.requestId));
  }
}
