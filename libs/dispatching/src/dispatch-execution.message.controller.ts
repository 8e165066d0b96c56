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
    // Longer than a live try can take, or the message would be redelivered while the network is
    // still being called and a second try could create the campaign twice: a fresh token and a
    // forced refresh (each at most CHANNEL_TIMEOUT_MS, 30 s) around up to two rounds of up to four
    // calls (X: funding instruments, campaign, line item, clean-up). After a crash, NATS hands
    // the message to another replica once this runs out; standalone releases it at the next start.
    ackWaitMs: 360_000,
    lanes: (config) => config.executorConcurrency,
  } satisfies DurableConsumerOptions<ServiceConfig>)
  execute(@Payload() event: RelayedEvent) {
    return this.executor.handle(event);
  }
}
