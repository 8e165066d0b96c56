import { ConsoleLogger, INestApplication, LogLevel, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ServiceConfig } from './config';
import { InfrastructureModule } from './infrastructure.module';

const LEVELS: Record<ServiceConfig['logLevel'], LogLevel[]> = {
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
  info: ['fatal', 'error', 'warn', 'log'],
  warn: ['fatal', 'error', 'warn'],
  error: ['fatal', 'error'],
};

export const jsonLogger = (config: ServiceConfig) => new ConsoleLogger(config.app, { json: true, colors: false, logLevels: LEVELS[config.logLevel] });

/**
 * Starts one app: the infrastructure of its config, its feature modules, HTTP on PORT (health,
 * and the API where the gateway is among them), JSON logs, and a graceful stop on SIGTERM.
 */
export async function startApp(
  config: ServiceConfig,
  features: Type<unknown>[],
  configure: (app: INestApplication) => void = () => undefined,
): Promise<INestApplication> {
  @Module({ imports: [InfrastructureModule.forRoot(config), ...features] })
  class AppModule {}

  const app = await NestFactory.create(AppModule, { bodyParser: false, logger: jsonLogger(config), abortOnError: false });
  configure(app);
  app.enableShutdownHooks();
  await app.listen(config.port, process.env.HOST || '0.0.0.0');
  return app;
}

/** A start that fails says why in one line (naming the variable for config errors) and exits 1. */
export function exitOnStartFailure(error: Error): never {
  process.stderr.write(`${JSON.stringify({ level: 'fatal', msg: `cannot start: ${error.message}` })}\n`);
  process.exit(1);
}
