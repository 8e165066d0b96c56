import { DynamicModule, INestApplication, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { Bus, BUS } from '@campaign-ops/bus';
import { BusTransport } from '@campaign-ops/bus-transport';
import { appLogger } from './pino-logger';
import { httpMetricsMiddleware } from './metrics';
import { MetricsServer, startMetricsServer } from './metrics.server';
import { NestFactory } from '@nestjs/core';
import { ServiceConfig } from './config';
import { answerMalformedRequestsInTheEnvelope } from './malformed-requests';
import { busRequestContext } from './bus-messages';
import { limitHeapGrowth } from './heap-growth';

/**
 * Starts one app from its module (each app's app.module.ts: its infrastructure and features): HTTP
 * on PORT (health, and the API where the gateway is among them), Prometheus metrics on
 * METRICS_PORT (nothing else there, and never on PORT), the message controllers over the bus,
 * JSON logs, and a graceful stop on SIGTERM.
 */
export async function startApp(
  config: ServiceConfig,
  appModule: DynamicModule,
  configure: (app: INestApplication) => void = () => undefined,
): Promise<INestApplication> {
  limitHeapGrowth(config.heapGrowingPercent);
  let metrics: MetricsServer | null = null;
  @Module({ imports: [appModule] })
  class Runtime implements OnApplicationShutdown {
    // app.close() ends the metrics server too, whoever calls it.
    async onApplicationShutdown(): Promise<void> {
      await metrics?.close();
    }
  }

  const app = await NestFactory.create(Runtime, { bodyParser: false, logger: appLogger(config), abortOnError: false });
  app.use(httpMetricsMiddleware);
  configure(app);
  // The services' message controllers (@MessagePattern, @EventPattern) over the app's bus.
  app.connectMicroservice({ strategy: new BusTransport(app.get<Bus>(BUS), config, busRequestContext) });
  await app.startAllMicroservices();
  // Longer than the idle timeouts of load balancers and HTTP clients in front of us, so a
  // keep-alive connection is never closed by us just as a client reuses it.
  const server = app.getHttpServer() as import('node:http').Server;
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  answerMalformedRequestsInTheEnvelope(server);
  const host = process.env.HOST || '0.0.0.0';
  metrics = await startMetricsServer(config.metricsPort, host);
  await app.listen(config.port, host);
  stopGracefullyOnSignals(app, config);
  return app;
}

/** A start that fails says why in one line (naming the variable for config errors) and exits 1. */
export function exitOnStartFailure(error: Error): never {
  process.stderr.write(`${JSON.stringify({ level: 'fatal', msg: `cannot start: ${error.message}` })}\n`);
  process.exit(1);
}

/**
 * SIGTERM/SIGINT: stop taking work (no new connections; consumers and loops stop pulling), let
 * what is in flight finish, close the stores, exit 0. Past the grace period, exit 1 regardless.
 */
function stopGracefullyOnSignals(app: INestApplication, config: ServiceConfig): void {
  const logger = new Logger('shutdown');
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: finishing work in flight (at most ${config.shutdownGraceMs} ms)`);
    setTimeout(() => {
      logger.error('grace period over; exiting with work unfinished (it will be redone: at least once)');
      process.exit(1);
    }, config.shutdownGraceMs).unref();
    const server = app.getHttpServer() as import('node:http').Server;
    server.close();
    server.closeIdleConnections?.();
    app.close().then(
      () => process.exit(0),
      (error: Error) => {
        logger.error(`stopping failed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  // `on`, not `once`: a repeated signal must find a listener, or its default action ends the
  // process mid-stop. Under `npm start` one Ctrl-C arrives twice (from the terminal to the whole
  // foreground job, and forwarded by npm); a second SIGTERM from an orchestrator is common too.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
