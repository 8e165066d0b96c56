import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Bus, BUS } from '@campaign-ops/bus';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { projectionProcessor } from '@campaign-ops/event-sourcing';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor, CONFIG, scrapeGauge, ServiceConfig, watchConsumerLag } from '@campaign-ops/service-runtime';
import { Delivery } from '@campaign-ops/webhook-domain';
import { WebhookPoster, WebhookSender } from '@campaign-ops/webhook-sender';
import { DeliveryQueries } from './delivery-queries';
import { DeliveryWorker } from './delivery-worker';
import { EndpointStore } from './endpoint-store';
import { EVENT_RETENTION_MS, EventQueries } from './event-queries';
import { DeliveryLoop } from './delivery-loop';
import { DELIVERIES } from './webhook-delivery.tokens';

/**
 * What webhook-delivery-service does on its own, beside answering messages: keeps the endpoint
 * views, sends due deliveries, reports its gauges, and forgets what is past its 30 days.
 */
@Injectable()
export class WebhookDeliveryProcessors implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('webhooks');
  private purgeTimer: NodeJS.Timeout | null = null;
  private projection: CheckpointedProcessor | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(DELIVERIES) private readonly deliveries: Collection<Delivery>,
    private readonly loop: DeliveryLoop,
    private readonly endpoints: EndpointStore,
    private readonly worker: DeliveryWorker,
    private readonly queries: DeliveryQueries,
    private readonly eventQueries: EventQueries,
    @Inject(WebhookSender) private readonly sender: WebhookPoster,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.projection = projectionProcessor(this.endpoints.live, { eventStore: this.eventStore, checkpoints: this.readStore.checkpoints });
    await this.projection.start();
    if (this.config.app === 'standalone') {
      const released = await this.worker.releaseLeases();
      if (released > 0) this.logger.warn(`resumed ${released} deliveries a previous run left mid-send`);
    }
    scrapeGauge('webhook_deliveries', 'Webhook deliveries in the store, by status.', ['status'], async () =>
      Promise.all(
        (['pending', 'succeeded', 'failed'] as const).map(
          async (status) => [{ status }, await this.deliveries.count({ status })] as [{ status: string }, number],
        ),
      ),
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
    await this.projection?.stop();
    await this.loop.stop();
    await this.sender.close();
  }
}
