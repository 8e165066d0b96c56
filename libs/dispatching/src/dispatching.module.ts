import { Module } from '@nestjs/common';
import { AD_NETWORKS, AdNetworks } from '@campaign-ops/ad-networks';
import { SandboxSimulator } from '@campaign-ops/channels';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { CreditHandlers } from './credit-handlers';
import { CreditLedgers } from './credit-ledgers';
import { CreditsMessageController } from './credits.message.controller';
import { DispatchCommands } from './dispatch-commands';
import { DispatchExecutionMessageController } from './dispatch-execution.message.controller';
import { DispatchExecutor, SANDBOX_PROVIDER } from './dispatch-executor';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchProcessors } from './dispatch-processors';
import { DispatchQueries } from './dispatch-queries';
import { DispatchStore } from './dispatch-store';
import { DispatchesMessageController } from './dispatches.message.controller';
import { LiveLaunches } from './live-launches';

/** The ad networks live dispatches run on, from `CHANNEL_<CHANNEL>_*` (API.md §4). */
function liveAdNetworks(_config: ServiceConfig): AdNetworks {
  return {};
}


/**
 * dispatch-service: owns the dispatch aggregate and the credit ledgers. Its message controllers
 * say what it answers and consumes; DispatchProcessors follow its event store.
 */
@Module({
  controllers: [DispatchesMessageController, CreditsMessageController, DispatchExecutionMessageController],
  providers: [
    { provide: SANDBOX_PROVIDER, useValue: new SandboxSimulator() },
    { provide: AD_NETWORKS, useFactory: liveAdNetworks, inject: [CONFIG] },
    LiveLaunches,
    DispatchStore,
    DispatchIdempotency,
    CreditLedgers,
    DispatchCommands,
    CreditHandlers,
    DispatchQueries,
    DispatchExecutor,
    DispatchProcessors,
  ],
})
export class DispatchingModule {}
