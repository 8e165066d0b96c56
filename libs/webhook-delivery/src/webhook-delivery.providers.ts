import { Provider } from '@nestjs/common';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { Delivery } from '@campaign-ops/webhook-domain';
import { SecretBox } from '@campaign-ops/secret-box';
import { BackgroundLoop, CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { deliveriesOf, partnerEventsOf, StoredPartnerEvent } from './delivery-store';
import { DeliveryQueries } from './delivery-queries';
import { DeliveryWorker } from './delivery-worker';
import { EndpointCommands } from './endpoint-commands';
import { EndpointHealth } from './endpoint-health';
import { EndpointStore } from './endpoint-store';
import { EventQueries } from './event-queries';
import { FanOut } from './fan-out';

/** The loop that sends due deliveries; fan-out and redelivery wake it when they store one. */
export const DELIVERY_LOOP = Symbol('DELIVERY_LOOP');
/** The read store's collections of deliveries and of partner events (opened once per app). */
export const DELIVERIES = Symbol('DELIVERIES');
export const PARTNER_EVENTS = Symbol('PARTNER_EVENTS');

const policyOf = (config: ServiceConfig) => ({ allowHttp: config.webhook.allowHttp, allowPrivateNetworks: config.webhook.allowPrivateNetworks });

export const webhookDeliveryProviders: Provider[] = [
  { provide: DELIVERIES, useFactory: deliveriesOf, inject: [READ_STORE] },
  { provide: PARTNER_EVENTS, useFactory: partnerEventsOf, inject: [READ_STORE] },
  EndpointStore,
  { provide: SecretBox, useFactory: (config: ServiceConfig) => SecretBox.fromHexKey(config.webhookSecretKey), inject: [CONFIG] },
  {
    provide: EndpointHealth,
    useFactory: (reads: ReadStore, endpoints: EndpointStore, config: ServiceConfig) => new EndpointHealth(reads, endpoints, config.webhook.disableAfterMs),
    inject: [READ_STORE, EndpointStore, CONFIG],
  },
  {
    provide: DeliveryWorker,
    useFactory: (deliveries: Collection<Delivery>, endpoints: EndpointStore, secrets: SecretBox, health: EndpointHealth, config: ServiceConfig) =>
      new DeliveryWorker(deliveries, endpoints, secrets, health, {
        timeoutMs: config.webhook.timeoutMs,
        retrySchedule: config.webhook.retrySchedule,
        policy: policyOf(config),
        userAgent: `campaign-ops-webhooks/${config.version}`,
      }),
    inject: [DELIVERIES, EndpointStore, SecretBox, EndpointHealth, CONFIG],
  },
  {
    provide: DELIVERY_LOOP,
    useFactory: (worker: DeliveryWorker, config: ServiceConfig) =>
      new BackgroundLoop('webhook-delivery', () => worker.sendNextDue(), { intervalMs: 250, concurrency: config.webhook.concurrency }),
    inject: [DeliveryWorker, CONFIG],
  },
  {
    provide: EndpointCommands,
    useFactory: (endpoints: EndpointStore, secrets: SecretBox, config: ServiceConfig) => new EndpointCommands(endpoints, secrets, policyOf(config)),
    inject: [EndpointStore, SecretBox, CONFIG],
  },
  {
    provide: DeliveryQueries,
    useFactory: (endpoints: EndpointStore, deliveries: Collection<Delivery>, loop: BackgroundLoop) => new DeliveryQueries(endpoints, deliveries, () => loop.kick()),
    inject: [EndpointStore, DELIVERIES, DELIVERY_LOOP],
  },
  {
    provide: FanOut,
    useFactory: (endpoints: EndpointStore, deliveries: Collection<Delivery>, events: Collection<StoredPartnerEvent>, loop: BackgroundLoop) =>
      new FanOut(endpoints, deliveries, events, () => loop.kick()),
    inject: [EndpointStore, DELIVERIES, PARTNER_EVENTS, DELIVERY_LOOP],
  },
  { provide: EventQueries, useFactory: (events: Collection<StoredPartnerEvent>) => new EventQueries(events), inject: [PARTNER_EVENTS] },
];
