import { Inject, Logger, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Bus, BUS, Consumer } from '@campaign-ops/bus';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { BackgroundLoop, CheckpointedProcessor, CONFIG, respondInRequestContext, scrapeGauge, watchConsumerLag, ServiceConfig } from '@campaign-ops/service-runtime';
import {
  CreateWebhookRequest,
  EventByIdRequest,
  ListEventsRequest,
  ListDeliveriesRequest,
  ListWebhooksRequest,
  RedeliverRequest,
  SUBJECTS,
  UpdateWebhookRequest,
  WebhookByIdRequest,
} from '@campaign-ops/service-messages';
import { Delivery, PARTNER_EVENT_SUBJECTS, PartnerEvent } from '@campaign-ops/webhook-domain';
import { Collection } from '@campaign-ops/read-store';
import { deliveriesOf, partnerEventsOf } from './delivery-store';
import { DeliveryQueries } from './delivery-queries';
import { DeliveryWorker } from './delivery-worker';
import { EndpointCommands } from './endpoint-commands';
import { EndpointStore } from './endpoint-store';
import { FanOut } from './fan-out';
import { EndpointHealth } from './endpoint-health';
import { EVENT_RETENTION_MS, EventQueries } from './event-queries';

/**
 * webhook-delivery-service: owns webhook endpoints (event-sourced) and deliveries. Fans every
 * partner event out to subscribed endpoints, then sends, signs and retries on the schedule.
 */
@Module({})
export class WebhookDeliveryModule implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('webhooks');
  private readonly endpoints: EndpointStore;
  private readonly loop: BackgroundLoop;
  private readonly worker: DeliveryWorker;
  private readonly commands: EndpointCommands;
  private readonly queries: DeliveryQueries;
  private readonly fanOut: FanOut;
  private readonly eventQueries: EventQueries;
  private readonly deliveries: Collection<Delivery>;
  private purgeTimer: NodeJS.Timeout | null = null;
  private projection: CheckpointedProcessor | null = null;
  private consumer: Consumer | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
  ) {
    const secrets = SecretBox.fromHexKey(config.webhookSecretKey);
    const policy = { allowHttp: config.webhook.allowHttp, allowPrivateNetworks: config.webhook.allowPrivateNetworks };
    const deliveries = (this.deliveries = deliveriesOf(readStore));
    this.endpoints = new EndpointStore(eventStore, readStore);
    const health = new EndpointHealth(readStore, this.endpoints, config.webhook.disableAfterMs);
    const worker = (this.worker = new DeliveryWorker(deliveries, this.endpoints, secrets, health, {
      timeoutMs: config.webhook.timeoutMs,
      retrySchedule: config.webhook.retrySchedule,
      policy,
      userAgent: `campaign-ops-webhooks/${config.version}`,
    }));
    this.loop = new BackgroundLoop('webhook-delivery', () => worker.sendNextDue(), { intervalMs: 250, concurrency: config.webhook.concurrency });
    this.commands = new EndpointCommands(this.endpoints, secrets, policy);
    this.queries = new DeliveryQueries(this.endpoints, deliveries, () => this.loop.kick());
    this.fanOut = new FanOut(this.endpoints, deliveries, partnerEventsOf(readStore), () => this.loop.kick());
    this.eventQueries = new EventQueries(partnerEventsOf(readStore));
  }

  async onApplicationBootstrap(): Promise<void> {
    const respond = <Req>(subject: string, handler: (request: Req) => Promise<unknown>) => respondInRequestContext<Req>(this.bus, subject, handler);
    await respond<CreateWebhookRequest>(SUBJECTS.webhookCreate, (r) => this.commands.create(r));
    await respond<ListWebhooksRequest>(SUBJECTS.webhookList, (r) => this.commands.list(r));
    await respond<WebhookByIdRequest>(SUBJECTS.webhookGet, (r) => this.commands.get(r));
    await respond<UpdateWebhookRequest>(SUBJECTS.webhookUpdate, (r) => this.commands.update(r));
    await respond<WebhookByIdRequest>(SUBJECTS.webhookDelete, (r) => this.commands.delete(r));
    await respond<WebhookByIdRequest>(SUBJECTS.webhookRotateSecret, (r) => this.commands.rotateSecret(r));
    await respond<ListDeliveriesRequest>(SUBJECTS.webhookDeliveries, (r) => this.queries.list(r));
    await respond<RedeliverRequest>(SUBJECTS.webhookRedeliver, (r) => this.queries.redeliver(r));
    await respond<ListEventsRequest>(SUBJECTS.eventsList, (r) => this.eventQueries.list(r));
    await respond<EventByIdRequest>(SUBJECTS.eventsGet, (r) => this.eventQueries.get(r));

    this.projection = new CheckpointedProcessor({
      name: 'webhook-endpoint-views',
      eventStore: this.eventStore,
      checkpoints: this.readStore.checkpoints,
      streamPrefixes: ['webhook-'],
      handle: async (event) => void (await this.endpoints.refreshView(event.streamId)),
    });
    await this.projection.start();
    this.consumer = await this.bus.consume<PartnerEvent>({ durable: 'webhook-fan-out', subject: PARTNER_EVENT_SUBJECTS }, (message) => this.fanOut.handle(message.data));
    if (this.config.app === 'standalone') {
      const released = await this.worker.releaseLeases();
      if (released > 0) this.logger.warn(`resumed ${released} deliveries a previous run left mid-send`);
    }
    scrapeGauge('webhook_deliveries', 'Webhook deliveries in the store, by status.', ['status'], async () =>
      Promise.all((['pending', 'succeeded', 'failed'] as const).map(async (status) => [{ status }, await this.deliveries.count({ status })] as [{ status: string }, number])),
    );
    watchConsumerLag(this.bus, ['webhook-fan-out']);
    this.loop.start();
    // Partner events and finished deliveries are kept 30 days (the Events API's window), then forgotten.
    const purge = async () => {
      await this.eventQueries.purgeExpired();
      await this.queries.purgeFinished(EVENT_RETENTION_MS);
    };
    this.purgeTimer = setInterval(() => void purge().catch((e: Error) => this.logger.warn(`purge failed: ${e.message}`)), 3_600_000);
    this.purgeTimer.unref();
    this.logger.log('webhook-delivery-service ready');
  }

  async onModuleDestroy(): Promise<void> {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    await this.consumer?.stop();
    await this.projection?.stop();
    await this.loop.stop();
  }
}
