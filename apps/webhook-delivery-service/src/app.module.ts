import { DynamicModule, Module } from '@nestjs/common';
import { WebhookDeliveryModule } from '@campaign-ops/webhook-delivery';
import { InfrastructureModule, ServiceConfig } from '@campaign-ops/service-runtime';

/** webhook-delivery-service: endpoints, fan-out and signed deliveries; its stores and bus from the config (InfrastructureModule). */
@Module({})
export class AppModule {
  static forConfig(config: ServiceConfig): DynamicModule {
    return { module: AppModule, imports: [InfrastructureModule.forRoot(config), WebhookDeliveryModule] };
  }
}
