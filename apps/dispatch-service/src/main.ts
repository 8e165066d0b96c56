import 'reflect-metadata';
import { exitOnStartFailure, loadConfig, startApp } from '@campaign-ops/service-runtime';
import { AppModule } from './app.module';

/** dispatch-service on its own: requests and events over NATS (NATS_URL is required), health on PORT. */
async function main() {
  const config = loadConfig('dispatch-service');
  if (!config.natsUrl) throw new Error('NATS_URL is required: dispatch-service talks to the other services over NATS');
  await startApp(config, AppModule.forConfig(config));
}

main().catch(exitOnStartFailure);
