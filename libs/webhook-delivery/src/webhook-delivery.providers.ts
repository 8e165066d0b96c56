import { Provider } from '@nestjs/common';
import { READ_STORE } from '@campaign-ops/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { UrlPolicy } from '@campaign-ops/url-guard';
import { WebhookSender, WebhookSenderThread } from '@campaign-ops/webhook-sender';
import { deliveriesOf, partnerEventsOf } from './delivery-store';
import { DeliveryLoop } from './delivery-loop';
import { DeliveryQueries } from './delivery-queries';
import { DeliveryWorker, DeliveryWorkerOptions } from './delivery-worker';
import { EndpointCommands } from './endpoint-commands';
import { EndpointHealth } from './endpoint-health';
import { EndpointStore } from './endpoint-store';
import { EventQueries } from './event-queries';
import { FanOut } from './fan-out';
import { DELIVERIES, DELIVERY_WORKER_OPTIONS, PARTNER_EVENTS, URL_POLICY, WEBHOOK_SETTINGS } from './webhook-delivery.tokens';

const policyOf = (config: ServiceConfig): UrlPolicy => ({ allowHttp: config.webhook.allowHttp, allowPrivateNetworks: config.webhook.allowPrivateNetworks });

/**
 * webhook-delivery-service's providers: its classes, injected by constructor; factories only for
 * ports (the read store's collections) and for configuration (what the classes take from it).
 */
export const webhookDeliveryProviders: Provider[] = [
  { provide: DELIVERIES, useFactory: deliveriesOf, inject: [READ_STORE] },
  { provide: PARTNER_EVENTS, useFactory: partnerEventsOf, inject: [READ_STORE] },
  { provide: SecretBox, useFactory: (config: ServiceConfig) => SecretBox.fromHexKey(config.webhookSecretKey), inject: [CONFIG] },
  { provide: URL_POLICY, useFactory: policyOf, inject: [CONFIG] },
  { provide: WEBHOOK_SETTINGS, useFactory: (config: ServiceConfig) => config.webhook, inject: [CONFIG] },
  {
    provide: DELIVERY_WORKER_OPTIONS,
    useFactory: (config: ServiceConfig): DeliveryWorkerOptions => ({
      timeoutMs: config.webhook.timeoutMs,
      retrySchedule: config.webhook.retrySchedule,
      policy: policyOf(config),
      userAgent: `campaign-ops-webhooks/${config.version}`,
    }),
    inject: [CONFIG],
  },
  // Keep-alive connections to partners, in a thread of their own (TLS and sockets on another core
  // than the service's event loop); no origin ever needs more than the deliveries in flight.
  {
    provide: WebhookSender,
    useFactory: (config: ServiceConfig) => new WebhookSenderThread({ connectionsPerOrigin: config.webhook.concurrency }),
    inject: [CONFIG],
  },
  EndpointStore,
  EndpointHealth,
  DeliveryWorker,
  DeliveryLoop,
  EndpointCommands,
  DeliveryQueries,
  FanOut,
  EventQueries,
];
