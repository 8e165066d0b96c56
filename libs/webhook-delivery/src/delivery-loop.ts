import { Inject, Injectable } from '@nestjs/common';
import { BackgroundLoop, CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { DeliveryWorker } from './delivery-worker';

/** The loop that sends due deliveries, in WEBHOOK_CONCURRENCY lanes; fan-out and redelivery wake it when they store one. */
@Injectable()
export class DeliveryLoop extends BackgroundLoop {
  constructor(worker: DeliveryWorker, @Inject(CONFIG) config: ServiceConfig) {
    super('webhook-delivery', () => worker.sendNextDue(), { intervalMs: 250, concurrency: config.webhook.concurrency });
  }
}
