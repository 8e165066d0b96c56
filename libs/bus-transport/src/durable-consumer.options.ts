/**
 * The second argument of `@EventPattern(subject, options)` on the bus: the durable consumer that
 * receives the subject's events. Settings that come from configuration (how many lanes) are
 * functions of it, resolved when the transport starts.
 */
export interface DurableConsumerOptions<Config = unknown> {
  /** Durable name: replicas with the same name share the work and resume where it stopped. */
  durable: string;
  /** Handlers running at once in this process (default 1): a slow message does not hold up the others. */
  lanes?: number | ((config: Config) => number);
  /** A message not settled within this is redelivered (a function of the configuration where it follows a setting, e.g. a timeout). */
  ackWaitMs?: number | ((config: Config) => number);
  /** While a handler runs, its delivery is kept for up to this long (see the bus port's ConsumerOptions). */
  maxHandlingMs?: number | ((config: Config) => number);
  /** Deliveries before a failing message is parked for an operator. */
  maxDeliver?: number;
}

export function isDurableConsumerOptions(extras: Record<string, unknown> | undefined): extras is DurableConsumerOptions & Record<string, unknown> {
  return typeof extras?.durable === 'string';
}
