import 'reflect-metadata';
import { configureHttp } from '@campaign-ops/gateway';
import { exitOnStartFailure, loadConfig, startApp } from '@campaign-ops/service-runtime';
import { AppModule } from './app.module';

/** api-gateway on its own: HTTP in, NATS out (NATS_URL is required). */
async function main() {
  const config = loadConfig('api-gateway');
  if (!config.natsUrl) throw new Error('NATS_URL is required: the gateway reaches the services only over NATS');
  await startApp(config, AppModule.forConfig(config), configureHttp);
}

main().catch(exitOnStartFailure);
