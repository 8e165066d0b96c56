import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Bus, BUS } from '@campaign-ops/bus';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedOptions, CheckpointedProcessor, CONFIG, scrapeGauge, ServiceConfig, watchConsumerLag } from '@campaign-ops/service-runtime';
import { CREDIT_LEDGER_STREAM_PREFIX, DISPATCH_STREAM_PREFIX } from '@campaign-ops/dispatch-domain';
import { CreditHandlers } from './credit-handlers';
import { DispatchIdempotency } from './dispatch-idempotency';
import { relayDispatchEvent } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';

/** Dispatch events relayed at once (see CheckpointedOptions.concurrency). */
const RELAY_CONCURRENCY = 64;

/**
 * What dispatch-service does on its own, beside answering messages: follows its event store
 * (relay to the bus, the dispatch views, the credit ledgers), reports its gauges, and forgets
 * idempotency records past their day.
 */
@Injectable()
export class DispatchProcessors implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('dispatching');
  private readonly processors: CheckpointedProcessor[] = [];
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    private readonly store: DispatchStore,
    private readonly credits: CreditHandlers,
    private readonly idempotency: DispatchIdempotency,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const follow = (name: string, prefix: string, handle: CheckpointedOptions['handle'], concurrency = 1) =>
      new CheckpointedProcessor({ name, eventStore: this.eventStore, checkpoints: this.readStore.checkpoints, streamPrefixes: [prefix], handle, concurrency });
    this.processors.push(
      // Publishes are de-duplicated by id and consumers take them in any order: many at once, so
      // that they share the bus's group commits.
      follow('dispatch-relay', DISPATCH_STREAM_PREFIX, (event) => relayDispatchEvent(this.store, this.bus, event), RELAY_CONCURRENCY),
      follow('dispatch-views', DISPATCH_STREAM_PREFIX, (event) => this.store.projectEvent(event)),
      follow('credit-ledgers', CREDIT_LEDGER_STREAM_PREFIX, (event) => this.credits.onLedgerEvent(event)),
    );
    await Promise.all(this.processors.map((p) => p.start()));
    scrapeGauge('dispatches', 'Dispatches in the read model, by status.', ['status'], async () =>
      Promise.all((['accepted', 'completed', 'failed'] as const).map(async (status) => [{ status }, await this.store.views.count({ status })] as [{ status: string }, number])),
    );
    watchConsumerLag(this.bus, ['dispatch-executor', 'credit-grants']);
    this.sweepTimer = setInterval(() => void this.idempotency.sweep().catch((e: Error) => this.logger.warn(`idempotency sweep failed: ${e.message}`)), 3_600_000);
    this.sweepTimer.unref();
    this.logger.log(`dispatch-service ready (${this.config.executorConcurrency} executor lanes)`);
  }

  async onModuleDestroy(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await Promise.all(this.processors.map((p) => p.stop()));
  }
}
