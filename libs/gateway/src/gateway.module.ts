import { Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { AccountDirectory } from '@campaign-ops/accounts';
import { AccountController } from './controllers/account.http.controller';
import { AdminController } from './controllers/admin.http.controller';
import { CampaignsController } from './controllers/campaigns.http.controller';
import { ConnectionsController } from './controllers/connections.http.controller';
import { DispatchesController } from './controllers/dispatches.http.controller';
import { EventsController } from './controllers/events.http.controller';
import { OpenApiController } from './controllers/openapi.http.controller';
import { WebhooksController } from './controllers/webhooks.http.controller';
import { GatewayProcessors } from './gateway.processors';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { ApiValidationPipe } from './http/api-validation.pipe';
import { ApiDocument } from './openapi/api-document';
import { AdminTokenGuard, ApiKeyGuard } from './http/auth.guards';
import { ApiInterceptors } from './http/api-interceptors';
import { EnvelopeInterceptor } from './http/envelope.interceptor';
import { idempotencyOptionsProvider, IdempotencyStore } from './http/idempotency';
import { IdempotencyInterceptor } from './http/idempotency.interceptor';
import { UnknownQueryInterceptor } from './http/unknown-query.interceptor';
import { LaunchFastPath } from './http/launch-fast-path';
import { LaunchRoute } from './http/launch-route';
import { RateLimitMiddleware } from './http/rate-limit.middleware';
import { ServiceClient } from './http/service-client';

/**
 * api-gateway: the HTTP edge. Authenticates keys, validates, wraps answers in the envelope and
 * reaches the services only over the bus. Accounts and keys are the only state it keeps.
 */
@Module({
  controllers: [
    CampaignsController,
    DispatchesController,
    ConnectionsController,
    WebhooksController,
    EventsController,
    AccountController,
    AdminController,
    OpenApiController,
  ],
  providers: [
    AccountDirectory,
    GatewayProcessors,
    ServiceClient,
    ApiDocument,
    ApiKeyGuard,
    AdminTokenGuard,
    RateLimitMiddleware,
    LaunchRoute,
    LaunchFastPath,
    IdempotencyStore,
    idempotencyOptionsProvider,
    UnknownQueryInterceptor,
    IdempotencyInterceptor,
    EnvelopeInterceptor,
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
    { provide: APP_PIPE, useClass: ApiValidationPipe },
    { provide: APP_INTERCEPTOR, useClass: ApiInterceptors },
  ],
})
export class GatewayModule {}
