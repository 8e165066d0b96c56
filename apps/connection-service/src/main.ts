import 'reflect-metadata';
import { ConnectionsModule } from '@campaign-ops/connections';
import { exitOnStartFailure, loadConfig, startApp } from '@campaign-ops/service-runtime';

/** connection-service on its own: requests and events over NATS (NATS_URL is required), health on PORT. */
async function main() {
  const config = loadConfig('connection-service');
  if (!config.natsUrl) throw new Error('NATS_URL is required: connection-service talks to the other services over NATS');
  await startApp(config, [ConnectionsModule]);
}

main().catch(exitOnStartFailure);
