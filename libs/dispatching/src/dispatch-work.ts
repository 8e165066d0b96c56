import { Inject, Injectable, Logger } from '@nestjs/common';
import { Bus, BUS, ConsumerProgress } from '@campaign-ops/bus';
import { DispatchState } from '@campaign-ops/dispatch-domain';
import { Known } from '@campaign-ops/event-sourcing';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { ExecutorProgress, executorOnBus } from './dispatch-backlog';
import { DispatchExecutor, WorkMessage } from './dispatch-executor';
import { DispatchWorkSink, RelayedEvent, workOnBus } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';
import { InHandTally } from './in-hand-tally';

/**
 * Where the relay's work goes, and how much of it waits (the overload rule's reading).
 *
 * What the executor does at once (a test key on a simulator answer that does not wait) runs in
 * the relay's hand, on the state the relay carries, in every deployment: the event store is
 * already the work's durable record, and the relay's checkpoint passes the event only once it is
 * done; a crash (or a lease lost to another replica) hands it again, and the executor, deciding
 * from the stream, does nothing twice. Over NATS that spares the work a crossing of JetStream
 * (a publish, a pull, an ack) that costs more than the simulator's answer. What waits (a live
 * network, `[sandbox:slow]`, a retry's delay) or fails in hand goes to the executor's durable
 * consumer on the bus, which every dispatch-service replica shares, where lanes, leases, delayed
 * redelivery and parking are made for it.
 */
@Injectable()
export class DispatchWork implements DispatchWorkSink, ExecutorProgress {
  private readonly logger = new Logger('dispatch-work');
  private readonly onBus: DispatchWorkSink;
  private readonly consumer: ExecutorProgress;
  /** What settled in hand, across replicas (the pace of the overload rule). */
  readonly tally: InHandTally;

  constructor(
    @Inject(BUS) bus: Bus,
    private readonly executor: DispatchExecutor,
    private readonly store: DispatchStore,
    @Inject(READ_STORE) readStore: ReadStore,
  ) {
    this.onBus = workOnBus(bus);
    this.consumer = executorOnBus(bus);
    this.tally = new InHandTally(readStore);
  }

  async accept(event: RelayedEvent, known: Known<DispatchState>): Promise<void> {
    if (!this.executor.answersAtOnce(known.state)) return this.onBus.accept(event, known);
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
    this.tally.settled();
  }

  /**
   * The executor's backlog for the overload rule, the same in every replica: every dispatch still
   * `accepted` in the read model waits (its view is written with the launch), and the pace counts
   * what settled in the relay's hand (InHandTally) and on the bus (its consumer's count).
   */
  async progress(): Promise<ConsumerProgress> {
    const [onBus, pending, inHand] = await Promise.all([this.consumer.progress(), this.store.views.count({ status: 'accepted' }), this.tally.count()]);
    return { pending, settled: inHand + onBus.settled };
  }
}
