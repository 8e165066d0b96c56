import { DynamicModule, Module } from '@nestjs/common';
import { GatewayModule } from '@campaign-ops/gateway';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';

/** the gateway: the public HTTP API, reaching the services over NATS; its stores and bus from the config (InfrastructureModule). */
@Module({})
export class AppModule {
  static forConfig(config: ServiceConfig): DynamicModule {
    return { module: AppModule, imports: [InfrastructureModule.forRoot(config), GatewayModule] };
  }
}
