import { Inject, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { AccountDirectory } from '@campaign-ops/accounts';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor } from '@campaign-ops/service-runtime';
import { AccountController } from './controllers/account.http.controller';
import { AdminController } from './controllers/admin.http.controller';
import { CampaignsController } from './controllers/campaigns.http.controller';
import { DispatchesController } from './controllers/dispatches.http.controller';
import { WebhooksController } from './controllers/webhooks.http.controller';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { AdminTokenGuard, ApiKeyGuard } from './http/auth.guards';
import { EnvelopeInterceptor } from './http/envelope.interceptor';
import { ServiceClient } from './http/service-client';

/**
 * api-gateway: the HTTP edge. Authenticates keys, validates, wraps answers in the envelope and
 * reaches the services only over the bus. Accounts and keys are the only state it keeps.
 */
@Module({
  controllers: [CampaignsController, DispatchesController, WebhooksController, AccountController, AdminController],
  providers: [
    { provide: AccountDirectory, useFactory: (events: EventStore, reads: ReadStore) => new AccountDirectory(events, reads), inject: [EVENT_STORE, READ_STORE] },
    ServiceClient,
    ApiKeyGuard,
    AdminTokenGuard,
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
    { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
  ],
})
export class GatewayModule implements OnApplicationBootstrap, OnModuleDestroy {
  private projection: CheckpointedProcessor | null = null;

  constructor(
    private readonly directory: AccountDirectory,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.projection = new CheckpointedProcessor({
      name: 'account-views',
      eventStore: this.eventStore,
      checkpoints: this.readStore.checkpoints,
      streamPrefixes: ['account-'],
      handle: (event) => this.directory.refreshViews(event.streamId),
    });
    await this.projection.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.projection?.stop();
  }
}
