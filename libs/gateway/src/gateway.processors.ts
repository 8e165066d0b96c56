import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ACCOUNT_STREAM_PREFIX, creditGrantsOf } from '@campaign-ops/account-domain';
import { AccountDirectory } from '@campaign-ops/accounts';
import { projectionProcessor } from '@campaign-ops/event-sourcing';
import { Bus, BUS } from '@campaign-ops/bus';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor } from '@campaign-ops/service-runtime';

/**
 * What the gateway does on its own, beside answering requests: keeps the account and key views,
 * and relays account events that carry credits to dispatch-service's ledgers over the bus.
 */
@Injectable()
export class GatewayProcessors implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly processors: CheckpointedProcessor[] = [];

  constructor(
    private readonly directory: AccountDirectory,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(BUS) private readonly bus: Bus,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const common = { eventStore: this.eventStore, checkpoints: this.readStore.checkpoints, streamPrefixes: [ACCOUNT_STREAM_PREFIX] };
    this.processors.push(
      projectionProcessor(this.directory.live, common),
      // Account events on the bus: dispatch-service applies their credit grants to its ledgers.
      new CheckpointedProcessor({
        ...common,
        name: 'account-relay',
        handle: async ({ position: _position, ...event }) => {
          // Only what carries credits leaves the gateway; key events (hashes) stay here.
          if (creditGrantsOf(event).length > 0) await this.bus.publish(`evt.account.${event.type}`, event, { msgId: event.id });
        },
      }),
    );
    await Promise.all(this.processors.map((p) => p.start()));
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.processors.map((p) => p.stop()));
  }
}
