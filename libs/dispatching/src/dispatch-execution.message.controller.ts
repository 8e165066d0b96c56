import { EventPattern, Payload } from '@nestjs/microservices';
import { DurableConsumerOptions } from '@campaign-ops/bus-transport';
import { MessageController, ServiceConfig } from '@campaign-ops/service-runtime';
import { DispatchExecutor } from './dispatch-executor';
import { DISPATCH_EVENT_SUBJECTS, RelayedEvent } from './dispatch-relay';

/** Runs accepted dispatches: one durable consumer, several lanes, so a slow provider call holds up no other. */
@MessageController()
export class DispatchExecutionMessageController {
  constructor(private readonly executor: DispatchExecutor) {}

  @EventPattern(DISPATCH_EVENT_SUBJECTS, {
    durable: 'dispatch-executor',
    ackWaitMs: 60_000,
    lanes: (config) => config.executorConcurrency,
  } satisfies DurableConsumerOptions<ServiceConfig>)
  execute(@Payload() event: RelayedEvent) {
    return this.executor.handle(event);
  }
}
