import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { Bus, BUS } from '@campaign-ops/bus';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor, CONFIG, scrapeGauge, ServiceConfig, watchConsumerLag } from '@campaign-ops/service-runtime';
import { projectionProcessor } from '@campaign-ops/event-sourcing';
import { DISPATCH_STREAM_PREFIX } from '@campaign-ops/dispatch-domain';
import { PARTNER_EVENT_SINK, PartnerEventSink, partnerEventsOnBus } from '@campaign-ops/webhook-domain';
import { ChargedDispatches } from './charged-dispatches';
import { CreditLedgers } from './credit-ledgers';
import { DispatchIdempotency } from './dispatch-idempotency';
import { EXECUTOR_DURABLE } from './dispatch-backlog';
import { relayDispatchEvent, RelayedStates } from './dispatch-relay';
import { DispatchWork } from './dispatch-work';
import { DispatchStore } from './dispatch-store';

/** Dispatch events relayed at once (see CheckpointedProcessor's `concurrency`). */
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
  private readonly relayedStates = new RelayedStates();
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    private readonly store: DispatchStore,
    private readonly charged: ChargedDispatches,
    private readonly ledgers: CreditLedgers,
    private readonly idempotency: DispatchIdempotency,
    private readonly work: DispatchWork,
    /** The fan-out, when it runs in this process (standalone); else partner events go on the bus. */
    @Optional() @Inject(PARTNER_EVENT_SINK) private readonly localFanOut: PartnerEventSink | null = null,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const stores = { eventStore: this.eventStore, checkpoints: this.readStore.checkpoints };
    const partnerEvents = this.localFanOut ?? partnerEventsOnBus(this.bus);
    this.processors.push(
      // Publishes are de-duplicated by id, fan-outs by the ids they derive, and both take events in
      // any order, as does the executor (it decides from the stream): many at once, so that their
      // writes share group commits.
      new CheckpointedProcessor({
        ...stores,
        name: 'dispatch-relay',
        streamPrefixes: [DISPATCH_STREAM_PREFIX],
        handle: (event) => relayDispatchEvent(this.store, this.work, partnerEvents, event, this.relayedStates),
        concurrency: RELAY_CONCURRENCY,
      }),
      projectionProcessor(this.store.live, stores),
      projectionProcessor(this.ledgers.live, { ...stores, react: (event) => this.charged.completeCharge(event) }),
    );
    await Promise.all(this.processors.map((p) => p.start()));
    scrapeGauge('dispatches', 'Dispatches in the read model, by status.', ['status'], async () =>
      Promise.all(
        (['accepted', 'completed', 'failed'] as const).map(
          async (status) => [{ status }, await this.store.views.count({ status })] as [{ status: string }, number],
        ),
      ),
    );
    watchConsumerLag(this.bus, [EXECUTOR_DURABLE, 'credit-grants']);
    this.sweepTimer = setInterval(
      () => void this.idempotency.sweep().catch((e: Error) => this.logger.warn(`idempotency sweep failed: ${e.message}`)),
      3_600_000,
    );
    this.sweepTimer.unref();
    this.logger.log(`dispatch-service ready (${this.config.executorConcurrency} executor lanes; work done at once runs in the relay's hand)`);
  }

  async onModuleDestroy(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await Promise.all(this.processors.map((p) => p.stop()));
    // The relay settled its last work: the next replica to hold it continues the count from here.
    await this.work.tally.save();
  }
}
