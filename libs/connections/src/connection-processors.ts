import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { Bus, BUS } from '@campaign-ops/bus';
import { CONNECTION_STREAM_PREFIX } from '@campaign-ops/connection-domain';
import { EVENT_STORE, EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor, scrapeGauge } from '@campaign-ops/service-runtime';
import { PARTNER_EVENT_SINK, PartnerEventSink, partnerEventsOnBus } from '@campaign-ops/webhook-domain';
import { projectionProcessor } from '@campaign-ops/event-sourcing';
import { ConnectionAccessService } from './connection-access';
import { relayConnectionEvent } from './connection-relay';
import { CONNECTION_SETTINGS, ConnectionSettings } from './connection-settings';
import { ConnectionStore } from './connection-store';
import { OAuthRounds } from './oauth-rounds';
import { TokenVault } from './token-vault';

/**
 * What connection-service does on its own, beside answering messages: follows its event store
 * (partner events to the bus, the `connections` view, tokens destroyed with their connection) and
 * sweeps: tokens about to expire are refreshed, OAuth state records past their window deleted.
 */
@Injectable()
export class ConnectionProcessors implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('connections');
  private readonly processors: CheckpointedProcessor[] = [];
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;

  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(CONNECTION_SETTINGS) private readonly settings: ConnectionSettings,
    private readonly store: ConnectionStore,
    private readonly vault: TokenVault,
    private readonly access: ConnectionAccessService,
    private readonly rounds: OAuthRounds,
    /** The fan-out, when it runs in this process (standalone); else partner events go on the bus. */
    @Optional() @Inject(PARTNER_EVENT_SINK) private readonly localFanOut: PartnerEventSink | null = null,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const follow = (name: string, handle: (event: RecordedEvent) => Promise<void>) =>
      new CheckpointedProcessor({
        name,
        eventStore: this.eventStore,
        checkpoints: this.readStore.checkpoints,
        streamPrefixes: [CONNECTION_STREAM_PREFIX],
        handle,
      });
    const partnerEvents = this.localFanOut ?? partnerEventsOnBus(this.bus);
    this.processors.push(
      follow('connection-relay', (event) => relayConnectionEvent(this.store, partnerEvents, event)),
      projectionProcessor(this.store.live, {
        eventStore: this.eventStore,
        checkpoints: this.readStore.checkpoints,
        // Done inline by the revocation too; here again should the process have stopped in between.
        react: async (event) => {
          if (event.type === 'ConnectionRevoked') await this.vault.destroy(event.streamId.slice(CONNECTION_STREAM_PREFIX.length));
        },
      }),
    );
    await Promise.all(this.processors.map((p) => p.start()));
    scrapeGauge('connections', 'Connections in the read model, by status.', ['status'], async () =>
      Promise.all(
        (['pending', 'active', 'reauth_required', 'revoked'] as const).map(
          async (status) => [{ status }, await this.store.views.count({ status })] as [{ status: string }, number],
        ),
      ),
    );
    this.sweepTimer = setInterval(() => this.sweep(), this.settings.refreshSweepMs);
    this.sweepTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.sweeping;
    await Promise.all(this.processors.map((p) => p.stop()));
  }

  /** One sweep at a time: a slow one is not overtaken by the next tick. */
  private sweep(): void {
    if (this.sweeping) return;
    this.sweeping = this.sweepOnce().finally(() => {
      this.sweeping = null;
    });
  }

  /** One round of the periodic work; one part failing does not keep the other from running. */
  async sweepOnce(): Promise<void> {
    await this.access
      .refreshExpiring()
      .then(({ checked, failed }) => {
        if (failed > 0) this.logger.warn(`refresh sweep: ${failed} of ${checked} expiring connections could not be refreshed`);
      })
      .catch((error: Error) => this.logger.warn(`refresh sweep failed: ${error.message}`));
    await this.rounds.sweepStates().catch((error: Error) => this.logger.warn(`sweeping OAuth states failed: ${error.message}`));
  }
}
