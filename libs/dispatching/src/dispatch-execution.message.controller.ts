import { EventPattern, Payload } from '@nestjs/microservices';
import { DurableConsumerOptions } from '@campaign-ops/bus-transport';
import { MessageController, ServiceConfig } from '@campaign-ops/service-runtime';
import { EXECUTOR_DURABLE } from './dispatch-backlog';
import { DispatchExecutor } from './dispatch-executor';
import { DISPATCH_EVENT_SUBJECTS, RelayedEvent } from './dispatch-relay';
import { CONNECTION_REQUEST_TIMEOUT_MS } from './live-launches';

/**
 * The longest one live try can take, with a margin: the message must not be redelivered while the
 * network is still being called, or a second try could create the campaign twice. A try is a
 * token request and a forced refresh (each at most CONNECTION_REQUEST_TIMEOUT_MS, holding a refresh of at
 * most one call) around two rounds of up to four calls (X: funding instruments, campaign, line
 * item, clean-up), and a lookup before them. The message is kept that long while its try runs
 * (renewed every third of EXECUTOR_LEASE_MS); after a crash another replica takes it once the
 * lease (EXECUTOR_LEASE_MS) runs out, and standalone releases it at the next start. Either way the
 * next try finds the try that was started and looks for its campaign before creating one.
 */
export const liveTryMaxMs = (channelTimeoutMs: number): number => 3 * CONNECTION_REQUEST_TIMEOUT_MS + 10 * channelTimeoutMs + 60_000;

/** Runs accepted dispatches: one durable consumer, several lanes, so a slow provider call holds up no other. */
@MessageController()
export class DispatchExecutionMessageController {
  constructor(private readonly executor: DispatchExecutor) {}

  @EventPattern(DISPATCH_EVENT_SUBJECTS, {
    durable: EXECUTOR_DURABLE,
    ackWaitMs: (config) => config.executorLeaseMs,
    maxHandlingMs: (config) => liveTryMaxMs(config.channelTimeoutMs),
    lanes: (config) => config.executorConcurrency,
  } satisfies DurableConsumerOptions<ServiceConfig>)
  execute(@Payload() event: RelayedEvent) {
    return this.executor.handle(event);
  }
}
