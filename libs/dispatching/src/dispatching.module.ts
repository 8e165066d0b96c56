import { Module } from '@nestjs/common';
import { SandboxSimulator } from '@campaign-ops/channels';
import { CreditHandlers } from './credit-handlers';
import { CreditLedgers } from './credit-ledgers';
import { CreditsMessageController } from './credits.message.controller';
import { DispatchCommands } from './dispatch-commands';
import { DispatchExecutionMessageController } from './dispatch-execution.message.controller';
import { CHANNEL_PROVIDERS, ChannelProviders, DispatchExecutor } from './dispatch-executor';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchProcessors } from './dispatch-processors';
import { DispatchQueries } from './dispatch-queries';
import { DispatchStore } from './dispatch-store';
import { DispatchesMessageController } from './dispatches.message.controller';

/** Test keys run on the simulator; live adapters arrive with connections (a later issue). */
const simulator = new SandboxSimulator();
const sandboxOnly: ChannelProviders = {
  forDispatch: (dispatch) => (dispatch.mode === 'test' ? simulator : null),
  liveChannelAvailable: () => false,
};

/**
 * dispatch-service: owns the dispatch aggregate and the credit ledgers. Its message controllers
 * say what it answers and consumes; DispatchProcessors follow its event store.
 */
@Module({
  controllers: [DispatchesMessageController, CreditsMessageController, DispatchExecutionMessageController],
  providers: [
    { provide: CHANNEL_PROVIDERS, useValue: sandboxOnly },
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
