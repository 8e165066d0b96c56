import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { BUS } from '@campaign-ops/bus';
import { EVENT_STORE } from '@campaign-ops/event-store';
import { READ_STORE } from '@campaign-ops/read-store';
import { ServiceConfig } from './config';
import { closeInfrastructure, Infrastructure, openInfrastructure } from './infrastructure';
import { HealthController } from './health.http.controller';
import { LocalServices } from './local-services';
import { CONFIG, INFRASTRUCTURE } from './infrastructure.tokens';
import { PROCESS_HOLDER, useProcessorLeases } from './processor-status';

/** Provides the ports (by token) and the config to every feature module of an app. */
@Global()
@Module({})
export class InfrastructureModule implements OnApplicationShutdown {
  constructor(@Inject(INFRASTRUCTURE) private readonly infrastructure: Infrastructure) {}

  static forRoot(config: ServiceConfig, options: { health?: boolean } = {}): DynamicModule {
    // Every checkpointed processor of the app runs in one replica at a time. Without NATS the app
    // is the standalone process, alone by construction: it takes its leases at once at start.
    useProcessorLeases({ holder: PROCESS_HOLDER, ...config.processorLease, seizeAtStart: config.natsUrl === null });
    return {
      module: InfrastructureModule,
      // Metrics are not among them: they are served on METRICS_PORT (metrics.server.ts).
      controllers: options.health === false ? [] : [HealthController],
      providers: [
        { provide: CONFIG, useValue: config },
        // The ports, their adapters chosen from configuration (SQLite or EventStoreDB/MongoDB, in-process or NATS).
        { provide: INFRASTRUCTURE, useFactory: () => openInfrastructure(config) },
        { provide: EVENT_STORE, useFactory: (i: Infrastructure) => i.eventStore, inject: [INFRASTRUCTURE] },
        { provide: READ_STORE, useFactory: (i: Infrastructure) => i.readStore, inject: [INFRASTRUCTURE] },
        { provide: BUS, useFactory: (i: Infrastructure) => i.bus, inject: [INFRASTRUCTURE] },
        // The requests a service of this app answers in the app itself (the standalone process holds them all).
        LocalServices,
      ],
      exports: [CONFIG, EVENT_STORE, READ_STORE, BUS, LocalServices],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await closeInfrastructure(this.infrastructure);
  }
}
