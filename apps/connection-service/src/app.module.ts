import { DynamicModule, Module } from '@nestjs/common';
import { ConnectionsModule } from '@campaign-ops/connections';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';

/** connection-service: provider connections and their tokens; its stores and bus from the config (InfrastructureModule). */
@Module({})
export class AppModule {
  static forConfig(config: ServiceConfig): DynamicModule {
    return { module: AppModule, imports: [InfrastructureModule.forRoot(config), ConnectionsModule] };
  }
}
