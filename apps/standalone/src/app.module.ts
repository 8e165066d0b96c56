import { DynamicModule, Module } from '@nestjs/common';
import { ConnectionsModule } from '@campaign-ops/connections';
import { DispatchingModule } from '@campaign-ops/dispatching';
import { GatewayModule } from '@campaign-ops/gateway';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';
import { WebhookDeliveryModule } from '@campaign-ops/webhook-delivery';

/**
 * The whole service in one process: the gateway and the three services' modules, on the stores and
 * bus of the config (embedded SQLite and the in-process bus by default).
 */
@Module({})
export class AppModule {
  static forConfig(config: ServiceConfig): DynamicModule {
    return { module: AppModule, imports: [InfrastructureModule.forRoot(config), GatewayModule, DispatchingModule, ConnectionsModule, WebhookDeliveryModule] };
  }
}
