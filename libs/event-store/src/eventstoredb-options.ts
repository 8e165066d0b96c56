// What EventStoreDbEventStore takes: its options and their defaults, the part of the client it
// uses, and the connection string with credentials.
import { EventStoreDBClient } from '@eventstore/db-client';
import { EventStoreLogger } from './event-store-logger';

export interface EventStoreDbOptions {
  /** The user every call runs as, kept out of the connection string so the string can be shown. */
  credentials?: { user: string; password: string };
  /** Where dropped subscriptions, resubscriptions and stalls are reported. */
  logger?: EventStoreLogger;
  /**
   * A subscription that received nothing (no event, no checkpoint, no heartbeat) for this long
   * while waiting is checked against the store, and restarted if the store has something for it
   * or does not answer. Default 60 s.
   */
  stallTimeoutMs?: number;
  /**
   * How long `ping` waits for its answer (the client ignores read deadlines: it sets them to
   * Infinity). Default 5 s.
   */
  pingTimeoutMs?: number;
  /** How long the stall check waits for its answer before counting the subscription as stuck. Default 10 s. */
  stallProbeTimeoutMs?: number;
  /** How long a read (a stream, a page of `$all`, the head) waits for the next answer from the server before failing. Default 10 s. */
  readTimeoutMs?: number;
  /**
   * How long an append waits for its answer before failing. The client sends appends over one
   * long-lived BatchAppend call whose gRPC deadline it sets to Infinity, so a node that stays
   * connected but stops answering would hold an append (and the launch waiting on it) for good.
   * An append given up on may still be written later: callers treat the failure as unknown (the
   * launch path by its Idempotency-Key, see dispatch-idempotency.ts). Default 10 s.
   */
  appendTimeoutMs?: number;
  /** Backoff of resubscriptions that made no progress (see ResubscribingFollower). Default 200 ms doubling to 15 s. */
  resubscribeBackoff?: { initialMs?: number; maxMs?: number };
}

/** The parts of the client the adapter uses. */
export type EventStoreDbClientLike = Pick<EventStoreDBClient, 'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'>;

export const DEFAULT_STALL_TIMEOUT_MS = 60_000;
export const DEFAULT_PING_TIMEOUT_MS = 5_000;
export const DEFAULT_STALL_PROBE_TIMEOUT_MS = 10_000;
export const DEFAULT_READ_TIMEOUT_MS = 10_000;
export const DEFAULT_APPEND_TIMEOUT_MS = 10_000;

/** `esdb://user:password@host…`: how the client takes its default credentials from a connection string. */
export function withUserInfo(connectionString: string, credentials: { user: string; password: string } | undefined): string {
  if (!credentials) return connectionString;
  const match = /^(esdb(?:\+discover)?:\/\/)(?:[^@/?]*@)?(.*)$/.exec(connectionString);
  if (!match) throw new Error('credentials need an esdb:// or esdb+discover:// connection string');
  return `${match[1]}${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@${match[2]}`;
}
