import { Module } from '@nestjs/common';
import { AdNetworksModule } from '@campaign-ops/ad-networks';
import { SandboxSimulator } from '@campaign-ops/channels';
import { CampaignChecks } from './campaign-checks';
import { ChargedDispatches } from './charged-dispatches';
import { CreditHandlers } from './credit-handlers';
import { CreditLedgers } from './credit-ledgers';
import { CreditsMessageController } from './credits.message.controller';
import { DispatchBacklog, EXECUTOR_PROGRESS } from './dispatch-backlog';
import { DispatchCommands } from './dispatch-commands';
import { DispatchExecutionMessageController } from './dispatch-execution.message.controller';
import { DispatchExecutor, SANDBOX_PROVIDER } from './dispatch-executor';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchProcessors } from './dispatch-processors';
import { DispatchQueries } from './dispatch-queries';
import { DispatchStore } from './dispatch-store';
import { DispatchWork } from './dispatch-work';
import { DispatchesMessageController } from './dispatches.message.controller';
import { LiveLaunches } from './live-launches';

/**
 * dispatch-service: owns the dispatch aggregate and the credit ledgers. Its message controllers
 * say what it answers and consumes; DispatchProcessors follow its event store.
 */
@Module({
  imports: [AdNetworksModule],
  controllers: [DispatchesMessageController, CreditsMessageController, DispatchExecutionMessageController],
  providers: [
    { provide: SANDBOX_PROVIDER, useValue: new SandboxSimulator() },
    LiveLaunches,
    DispatchStore,
    DispatchIdempotency,
    CreditLedgers,
    ChargedDispatches,
    DispatchCommands,
    DispatchBacklog,
    CampaignChecks,
    CreditHandlers,
    DispatchQueries,
    DispatchExecutor,
    DispatchWork,
    { provide: EXECUTOR_PROGRESS, useExisting: DispatchWork },
    DispatchProcessors,
  ],
})
export class DispatchingModule {}
