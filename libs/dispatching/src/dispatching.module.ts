import { Inject, Logger, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';

import { Bus, BUS, Consumer } from '@campaign-ops/bus';
import { SandboxSimulator } from '@campaign-ops/channels';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor, CONFIG, respondInRequestContext, scrapeGauge, watchConsumerLag, ServiceConfig, withRequestId } from '@campaign-ops/service-runtime';
import { CreateDispatchRequest, CreditBalancesRequest, DispatchByIdRequest, GrantCreditsRequest, ListDispatchesRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { CREDIT_LEDGER_STREAM_PREFIX, DISPATCH_STREAM_PREFIX } from '@campaign-ops/dispatch-domain';
import { CreditHandlers } from './credit-handlers';
import { CreditLedgers } from './credit-ledgers';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchCommands } from './dispatch-commands';
import { DispatchExecutor, ChannelProviders } from './dispatch-executor';
import { DispatchQueries } from './dispatch-queries';
import { DISPATCH_EVENT_SUBJECTS, RelayedEvent, relayDispatchEvent } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';

export const CHANNEL_PROVIDERS = Symbol('CHANNEL_PROVIDERS');

/** Test keys run on the simulator; live adapters arrive with connections (a later issue). */
const simulator = new SandboxSimulator();
const sandboxOnly: ChannelProviders = {
  forDispatch: (dispatch) => (dispatch.mode === 'test' ? simulator : null),
  liveChannelAvailable: () => false,
};

/**
 * dispatch-service: owns the dispatch aggregate. Answers the gateway's requests, relays its
 * events to the bus, executes accepted dispatches, and keeps the `dispatches` read model.
 */
@Module({
  providers: [
    { provide: DispatchStore, useFactory: (events: EventStore, reads: ReadStore) => new DispatchStore(events, reads), inject: [EVENT_STORE, READ_STORE] },
    { provide: CHANNEL_PROVIDERS, useValue: sandboxOnly },
    { provide: DispatchIdempotency, useFactory: (reads: ReadStore) => new DispatchIdempotency(reads), inject: [READ_STORE] },
    { provide: CreditLedgers, useFactory: (events: EventStore, reads: ReadStore) => new CreditLedgers(events, reads), inject: [EVENT_STORE, READ_STORE] },
    {
      provide: DispatchCommands,
      useFactory: (store: DispatchStore, ledgers: CreditLedgers, idempotency: DispatchIdempotency, bus: Bus, providers: ChannelProviders) =>
        new DispatchCommands(store, ledgers, idempotency, bus, (channel) => providers.liveChannelAvailable(channel)),
      inject: [DispatchStore, CreditLedgers, DispatchIdempotency, BUS, CHANNEL_PROVIDERS],
    },
    { provide: CreditHandlers, useFactory: (ledgers: CreditLedgers, commands: DispatchCommands) => new CreditHandlers(ledgers, commands), inject: [CreditLedgers, DispatchCommands] },
    { provide: DispatchQueries, useFactory: (store: DispatchStore) => new DispatchQueries(store), inject: [DispatchStore] },
    { provide: DispatchExecutor, useFactory: (store: DispatchStore, providers: ChannelProviders) => new DispatchExecutor(store, providers), inject: [DispatchStore, CHANNEL_PROVIDERS] },
  ],
})
export class DispatchingModule implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('dispatching');
  private readonly processors: CheckpointedProcessor[] = [];
  private readonly consumers: Consumer[] = [];
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    private readonly store: DispatchStore,
    private readonly commands: DispatchCommands,
    private readonly queries: DispatchQueries,
    private readonly executor: DispatchExecutor,
    private readonly credits: CreditHandlers,
    private readonly idempotency: DispatchIdempotency,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const respond = <Req>(subject: string, handler: (request: Req) => Promise<unknown>) => respondInRequestContext<Req>(this.bus, subject, handler);
    await respond<CreateDispatchRequest>(SUBJECTS.dispatchCreate, (r) => this.commands.create(r));
    await respond<DispatchByIdRequest>(SUBJECTS.dispatchRetry, (r) => this.commands.retry(r));
    await respond<DispatchByIdRequest>(SUBJECTS.dispatchGet, (r) => this.queries.get(r));
    await respond<ListDispatchesRequest>(SUBJECTS.dispatchList, (r) => this.queries.list(r));
    await respond<DispatchByIdRequest>(SUBJECTS.dispatchEvents, (r) => this.queries.history(r));
    await respond<GrantCreditsRequest>(SUBJECTS.creditsGrant, (r) => this.credits.grant(r));
    await respond<CreditBalancesRequest>(SUBJECTS.creditsBalances, (r) => this.credits.balances(r));

    const common = { eventStore: this.eventStore, checkpoints: this.readStore.checkpoints, streamPrefixes: [DISPATCH_STREAM_PREFIX] };
    this.processors.push(
      new CheckpointedProcessor({ ...common, name: 'dispatch-relay', handle: (event) => relayDispatchEvent(this.store, this.bus, event) }),
      new CheckpointedProcessor({ ...common, name: 'dispatch-views', handle: (event) => this.store.refreshView(event.streamId) }),
    );
    this.processors.push(
      new CheckpointedProcessor({
        eventStore: this.eventStore,
        checkpoints: this.readStore.checkpoints,
        streamPrefixes: [CREDIT_LEDGER_STREAM_PREFIX],
        name: 'credit-ledgers',
        handle: (event) => this.credits.onLedgerEvent(event),
      }),
    );
    await Promise.all(this.processors.map((p) => p.start()));
    this.consumers.push(
      await this.bus.consume<RelayedEvent>({ durable: 'credit-grants', subject: 'evt.account.>' }, (message) => this.credits.onAccountEvent(message.data)),
    );

    // Several lanes of one durable consumer: a slow provider call does not hold up the others.
    for (let lane = 0; lane < this.config.executorConcurrency; lane++) {
      this.consumers.push(
        await this.bus.consume<RelayedEvent>({ durable: 'dispatch-executor', subject: DISPATCH_EVENT_SUBJECTS, ackWaitMs: 60_000 }, (message) =>
          withRequestId(message.data.metadata.requestId as string | undefined, () => this.executor.handle(message)),
        ),
      );
    }
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
    await Promise.all(this.consumers.map((c) => c.stop()));
    await Promise.all(this.processors.map((p) => p.stop()));
  }
}

