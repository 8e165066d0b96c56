import { Inject, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { AccountDirectory } from '@campaign-ops/accounts';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor } from '@campaign-ops/service-runtime';
import { Bus, BUS } from '@campaign-ops/bus';
import { creditGrantsOf } from '@campaign-ops/account-domain';
import { AccountController } from './controllers/account.http.controller';
import { AdminController } from './controllers/admin.http.controller';
import { CampaignsController } from './controllers/campaigns.http.controller';
import { DispatchesController } from './controllers/dispatches.http.controller';
import { EventsController } from './controllers/events.http.controller';
import { OpenApiController } from './controllers/openapi.http.controller';
import { WebhooksController } from './controllers/webhooks.http.controller';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { ApiValidationPipe } from './http/api-validation.pipe';
import { ApiDocument } from './openapi/api-document';
import { AdminTokenGuard, ApiKeyGuard } from './http/auth.guards';
import { EnvelopeInterceptor } from './http/envelope.interceptor';
import { idempotencyStoreProvider } from './http/idempotency';
import { IdempotencyInterceptor } from './http/idempotency.interceptor';
import { RateLimitMiddleware } from './http/rate-limit.middleware';
import { SERVICES, ServiceClient } from './http/service-client';
import { ClientsModule } from '@nestjs/microservices';
import { BusClient } from '@campaign-ops/bus-transport';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';

/**
 * api-gateway: the HTTP edge. Authenticates keys, validates, wraps answers in the envelope and
 * reaches the services only over the bus. Accounts and keys are the only state it keeps.
 */
@Module({
  imports: [
    ClientsModule.registerAsync([
      {
        name: SERVICES,
        inject: [BUS, CONFIG],
        useFactory: (bus: Bus, config: ServiceConfig) => ({ customClass: BusClient, options: { bus, requestTimeoutMs: config.requestTimeoutMs } }),
      },
    ]),
  ],
  controllers: [CampaignsController, DispatchesController, WebhooksController, EventsController, AccountController, AdminController, OpenApiController],
  providers: [
    { provide: AccountDirectory, useFactory: (events: EventStore, reads: ReadStore) => new AccountDirectory(events, reads), inject: [EVENT_STORE, READ_STORE] },
    ServiceClient,
    ApiDocument,
    ApiKeyGuard,
    AdminTokenGuard,
    RateLimitMiddleware,
    idempotencyStoreProvider,
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
    { provide: APP_PIPE, useClass: ApiValidationPipe },
    // Outermost first: a replayed answer skips the envelope (it is already enveloped).
    { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
    { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
  ],
})
export class GatewayModule implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly processors: CheckpointedProcessor[] = [];

  constructor(
    private readonly directory: AccountDirectory,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(BUS) private readonly bus: Bus,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const common = { eventStore: this.eventStore, checkpoints: this.readStore.checkpoints, streamPrefixes: ['account-'] };
    this.processors.push(
      new CheckpointedProcessor({ ...common, name: 'account-views', handle: (event) => this.directory.refreshViews(event.streamId) }),
      // Account events on the bus: dispatch-service applies their credit grants to its ledgers.
      new CheckpointedProcessor({
        ...common,
        name: 'account-relay',
        handle: async ({ position: _position, ...event }) => {
          // Only what carries credits leaves the gateway; key events (hashes) stay here.
          if (creditGrantsOf(event).length > 0) await this.bus.publish(`evt.account.${event.type}`, event, { msgId: event.id });
        },
      }),
    );
    await Promise.all(this.processors.map((p) => p.start()));
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.processors.map((p) => p.stop()));
  }
}
