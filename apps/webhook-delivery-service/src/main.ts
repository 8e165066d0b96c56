import 'reflect-metadata';
import { WebhookDeliveryModule } from '@campaign-ops/webhook-delivery';
import { exitOnStartFailure, loadConfig, startApp } from '@campaign-ops/service-runtime';

/** webhook-delivery-service on its own: requests and events over NATS (NATS_URL is required), health on PORT. */
async function main() {
  const config = loadConfig('webhook-delivery-service');
  if (!config.natsUrl) throw new Error('NATS_URL is required: webhook-delivery-service talks to the other services over NATS');
  await startApp(config, [WebhookDeliveryModule]);
}

main().catch(exitOnStartFailure);
