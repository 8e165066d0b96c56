import { DynamicModule, Module } from '@nestjs/common';
import { DispatchingModule } from '@campaign-ops/dispatching';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';

/** dispatch-service: dispatches and the credit ledgers; its stores and bus from the config (InfrastructureModule). */
@Module({})
export class AppModule {
  static forConfig(config: ServiceConfig): DynamicModule {
    return { module: AppModule, imports: [InfrastructureModule.forRoot(config), DispatchingModule] };
  }
}
