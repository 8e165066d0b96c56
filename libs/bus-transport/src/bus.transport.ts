import { CustomTransportStrategy, MessageHandler, Server } from '@nestjs/microservices';
import { isObservable, lastValueFrom, Observable } from 'rxjs';
import { Bus, BusHeaders, Consumer, HandlerOutcome } from '@campaign-ops/bus';
import { BusContext } from './bus.context';
import { isDurableConsumerOptions } from './durable-consumer.options';

export const BUS_TRANSPORT_ID = Symbol('campaign-ops-bus');

/**
 * What runs around every handler, for every message: the app's context (its request id, a log
 * line). A plain function rather than a NestJS interceptor, which costs every message an
 * Observable chain and an AsyncResource binding (about 100 µs a message, measured).
 */
export type AroundHandler = (run: () => Promise<unknown>, data: unknown, context: BusContext) => Promise<unknown>;

/**
 * Our bus (NATS JetStream or in-process, whichever adapter the app runs on) as a NestJS transport:
 * `@MessagePattern(subject)` methods answer requests (one replica of a queue group each), and
 * `@EventPattern(subject, { durable, lanes, ackWaitMs })` methods are durable consumers: a handler
 * that returns settles the message, one that throws gets it redelivered after a backoff (parked after
 * maxDeliver), and one that returns `{ retryInMs }` gets it back after that delay. Guards,
 * interceptors, pipes and exception filters apply to these handlers as to HTTP ones; `around`
 * wraps each of them.
 */
export class BusTransport<Config = unknown> extends Server implements CustomTransportStrategy {
  override readonly transportId = BUS_TRANSPORT_ID;
  private readonly consumers: Consumer[] = [];

  constructor(
    private readonly bus: Bus,
    private readonly config?: Config,
    private readonly around?: AroundHandler,
  ) {
    super();
  }

  async listen(callback: (error?: unknown) => void): Promise<void> {
    try {
      for (const [pattern, handler] of this.messageHandlers) {
        if (handler.isEventHandler) await this.consume(pattern, handler);
        else await this.bus.respond(pattern, (data, { subject, headers }) => this.invoke(handler, data, new BusContext([subject, headers, 1])));
      }
      callback();
    } catch (error) {
      callback(error);
    }
  }

  /** Stops pulling; resolves once the messages in hand are settled. */
  async close(): Promise<void> {
    await Promise.all(this.consumers.splice(0).map((consumer) => consumer.stop()));
  }

  on(): never {
    throw new Error('the bus transport has no events to listen to');
  }

  unwrap<T>(): T {
    return this.bus as T;
  }

  private async consume(subject: string, handler: MessageHandler): Promise<void> {
    const extras = handler.extras;
    if (!isDurableConsumerOptions(extras)) throw new Error(`@EventPattern('${subject}') needs { durable } to consume from the bus`);
    const lanes = typeof extras.lanes === 'function' ? extras.lanes(this.config) : (extras.lanes ?? 1);
    const ackWaitMs = typeof extras.ackWaitMs === 'function' ? extras.ackWaitMs(this.config) : extras.ackWaitMs;
    const maxHandlingMs = typeof extras.maxHandlingMs === 'function' ? extras.maxHandlingMs(this.config) : extras.maxHandlingMs;
    const options = { durable: extras.durable, subject, ackWaitMs, maxHandlingMs, maxDeliver: extras.maxDeliver, lanes };
    this.consumers.push(
      await this.bus.consume(
        options,
        (message) => this.invoke(handler, message.data, new BusContext([message.subject, message.headers, message.deliveryCount])) as Promise<HandlerOutcome>,
      ),
    );
  }

  /** Runs a handler (inside `around`, if any) through NestJS's pipeline and settles with its last value, or its error. */
  private invoke(handler: MessageHandler, data: unknown, context: BusContext): Promise<unknown> {
    return this.around ? this.around(() => this.settle(handler, data, context), data, context) : this.settle(handler, data, context);
  }

  private async settle(handler: MessageHandler, data: unknown, context: BusContext): Promise<unknown> {
    const result: unknown = await handler(data, context);
    if (!isObservable(result)) return result;
    try {
      return await lastValueFrom(result as Observable<unknown>, { defaultValue: undefined });
    } catch (error) {
      // The bus reports a responder's failure by its message: keep one, whatever was thrown.
      throw error instanceof Error ? error : new Error(describe(error));
    }
  }
}

function describe(error: unknown): string {
  if (error && typeof error === 'object' && 'message' in error) return String((error as { message: unknown }).message);
  return String(error);
}

export type { BusHeaders };
