import { Inject, Injectable, Logger } from '@nestjs/common';
import { Bus, BUS, ConsumerProgress } from '@campaign-ops/bus';
import { DispatchState } from '@campaign-ops/dispatch-domain';
import { Known } from '@campaign-ops/event-sourcing';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { ExecutorProgress, executorOnBus } from './dispatch-backlog';
import { DispatchExecutor, WorkMessage } from './dispatch-executor';
import { DispatchWorkSink, RelayedEvent, workOnBus } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';

/**
 * Where the relay's work goes, and how much of it waits (the overload rule's reading).
 *
 * Over NATS: on the bus, to the executor's durable consumer, which every dispatch-service replica
 * shares. On the in-process bus (the standalone process, the only user of its files) no other
 * replica can take work, and the event store is already the work's durable record: what the
 * executor does at once (a test key on a simulator answer that does not wait) runs in the relay's
 * hand, and the relay's checkpoint passes the event only once it is done; a crash before then
 * hands it again, and the executor, deciding from the stream, does nothing twice. What waits (a
 * live network, `[sandbox:slow]`, a retry's delay) or fails in hand goes to the bus as before,
 * where lanes, leases, delayed redelivery and parking are made for it.
 */
@Injectable()
export class DispatchWork implements DispatchWorkSink, ExecutorProgress {
  private readonly logger = new Logger('dispatch-work');
  private readonly onBus: DispatchWorkSink;
  private readonly consumer: ExecutorProgress;
  /** Whether work may run in the relay's hand: this process is the bus's only user. */
  readonly inHand: boolean;
  /** Work events settled in the relay's hand since start (the pace of the overload rule). */
  private settledInHand = 0;

  constructor(
    @Inject(BUS) bus: Bus,
    @Inject(CONFIG) config: Pick<ServiceConfig, 'natsUrl'>,
    private readonly executor: DispatchExecutor,
    private readonly store: DispatchStore,
  ) {
    this.onBus = workOnBus(bus);
    this.consumer = executorOnBus(bus);
    this.inHand = config.natsUrl === null;
  }

  async accept(event: RelayedEvent, known: Known<DispatchState>): Promise<void> {
    if (!this.inHand || !this.executor.answersAtOnce(known.state)) return this.onBus.accept(event, known);
    let outcome;
    try {
      outcome = await this.executor.handle(event, known);
    } catch (error) {
      // The consumer redelivers after a backoff and parks what keeps failing; the relay goes on.
      this.logger.warn(`running ${event.streamId} in hand failed (${(error as Error).message}); handing it to the executor's consumer`);
      return this.onBus.accept(event, known);
    }
    if (outcome) {
      // A transient failure: the next try waits on the bus (durable), not in the relay's hand.
      const waiting: WorkMessage = { ...event, notBefore: Date.now() + outcome.retryInMs };
      await this.onBus.accept(waiting, known);
    }
    this.settledInHand++;
  }

  /**
   * The executor's backlog for the overload rule. On the bus: its consumer's. In hand: every
   * dispatch still `accepted` in the read model waits (its view is written with the launch), and
   * the pace counts what settled in hand and on the bus.
   */
  async progress(): Promise<ConsumerProgress> {
    const onBus = await this.consumer.progress();
    if (!this.inHand) return onBus;
    return { pending: await this.store.views.count({ status: 'accepted' }), settled: this.settledInHand + onBus.settled };
  }
}
