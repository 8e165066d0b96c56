// The errors EventStoreDbEventStore raises beyond the port's: undeliverable events, timeouts,
// NotLeader retries exhausted, a subscription position refused.

/**
 * An event the store holds but the port cannot represent (data or metadata that is not a JSON
 * object): reading it again will not help, so a subscription reaching it stops with onError.
 */
export class UndeliverableEventError extends Error {
  constructor(
    readonly streamId: string,
    readonly revision: bigint,
    reason: string,
  ) {
    super(`event ${revision} of stream ${streamId} cannot be read: ${reason}`);
    this.name = 'UndeliverableEventError';
  }
}

/** EventStoreDB accepted a call and then sent nothing for `timeoutMs`: the call is cancelled. */
export class EventStoreTimeoutError extends Error {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super(`EventStoreDB did not answer within ${timeoutMs} ms (${operation})`);
    this.name = 'EventStoreTimeoutError';
  }
}

/** The node kept answering NotLeader, even after the client reconnected to the leader it named. */
export class NotLeaderRetriesExhaustedError extends Error {
  constructor(
    readonly operation: string,
    readonly attempts: number,
    readonly leader: { address: string; port: number } | undefined,
    override readonly cause: unknown,
  ) {
    const where = leader ? ` (it names the leader at ${leader.address}:${leader.port})` : '';
    super(
      `${operation}: the EventStoreDB node is not the leader${where}, ${attempts} times in a row; ` +
        'the cluster may be electing a leader, or the nodes disagree on which one it is',
    );
    this.name = 'NotLeaderRetriesExhaustedError';
  }
}

// SubscriptionPositionRefusedError is the port's (event-store.port.ts): what a processor recognizes.
export { SubscriptionPositionRefusedError } from './event-store.port';

export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
