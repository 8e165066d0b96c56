import { Global, Module } from '@nestjs/common';
import { PARTNER_EVENT_SINK } from '@campaign-ops/webhook-domain';
import { FanOut } from './fan-out';
import { PartnerEventsMessageController } from './partner-events.message.controller';
import { WebhookDeliveryProcessors } from './webhook-delivery.processors';
import { webhookDeliveryProviders } from './webhook-delivery.providers';
import { WebhooksMessageController } from './webhooks.message.controller';

/**
 * webhook-delivery-service: owns webhook endpoints (event-sourced) and deliveries. Fans every
 * partner event out to subscribed endpoints, then sends, signs and retries on the schedule.
 *
 * Global for one token: where this module runs beside the relays (the standalone process), its
 * fan-out is their PARTNER_EVENT_SINK, and partner events cross no bus. The bus consumer stays,
 * for what a relay published before (a process that ran as four apps, or an older version).
 */
@Global()
@Module({
  controllers: [WebhooksMessageController, PartnerEventsMessageController],
  providers: [...webhookDeliveryProviders, WebhookDeliveryProcessors, { provide: PARTNER_EVENT_SINK, useExisting: FanOut }],
  exports: [PARTNER_EVENT_SINK],
})
export class WebhookDeliveryModule {}
