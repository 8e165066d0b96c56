import { Module } from '@nestjs/common';
import { PartnerEventsMessageController } from './partner-events.message.controller';
import { WebhookDeliveryProcessors } from './webhook-delivery.processors';
import { webhookDeliveryProviders } from './webhook-delivery.providers';
import { WebhooksMessageController } from './webhooks.message.controller';

/**
 * webhook-delivery-service: owns webhook endpoints (event-sourced) and deliveries. Fans every
 * partner event out to subscribed endpoints, then sends, signs and retries on the schedule.
 */
@Module({
  controllers: [WebhooksMessageController, PartnerEventsMessageController],
  providers: [...webhookDeliveryProviders, WebhookDeliveryProcessors],
})
export class WebhookDeliveryModule {}
