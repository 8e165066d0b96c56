// What NatsBus.connect takes, and the defaults of the streams it sets up.

import { BusLogger } from './bus-logger';

export interface NatsBusOptions {
  /** One URL or several separated by commas. */
  servers: string;
  /** Connection name, shown by the server's monitoring. */
  name: string;
  /**
   * JetStream stream holding `evt.>`. Default `CAMPAIGN_OPS_EVENTS`. Parked messages live in a
   * second stream, `<streamName>_PARKED`, bound to `parked.>`: one stream name per NATS account.
   */
  streamName?: string;
  /** Window in which a repeated `msgId` is dropped. Default 2 minutes. */
  duplicateWindowMs?: number;
  /**
   * Replicas of both streams (`num_replicas`): 1 on a single server, 3 (or 5) on a cluster so a
   * node can be lost. An existing stream is updated to it. Default 1.
   */
  streamReplicas?: number;
  /**
   * How long the events stream keeps a message (`max_age`), acked or not. Default 7 days. An
   * existing stream is updated to it (messages already older go at once). Must exceed the
   * de-duplication window.
   */
  streamMaxAgeMs?: number;
  /**
   * How long the parked stream keeps a parked message (`max_age`): the time operators have to list
   * and replay it. Default 30 days. Must exceed the de-duplication window.
   */
  parkedMaxAgeMs?: number;
  /**
   * The service's NATS user and password, when the server requires them (k8s/datastores/nats-auth.conf).
   * Replies to this connection's requests then come to `_INBOX.<user>.>`, the only inbox its user
   * may read.
   */
  credentials?: { user: string; password: string };
  /** PEM file of the CA that signed the server's certificate, for `tls://` servers with a private CA. */
  tlsCaFile?: string;
  /**
   * Create the streams when missing and bring them to these settings (default). False: only check
   * they exist, for users not allowed to change them (the services, when an operator's
   * `ops bus setup` owns the streams): a missing stream fails the connect, naming that command.
   */
  manageStreams?: boolean;
  logger?: BusLogger;
}

export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
export const DEFAULT_STREAM_REPLICAS = 1;
// Retention of the events stream. Limits retention keeps a message until it is this old, acked or
// not; without a limit (max_age 0) the stream only grows. 7 days is safe because:
// - the stream is a transport, not a record: the event store is the source of truth, and every
//   message on `evt.>` is a copy of an event in it;
// - the relay (event store → bus) follows the event store from its own checkpoint, never reads the
//   stream back, and republishes from that checkpoint after any restart or outage: expiring old
//   messages takes nothing from it;
// - consumers ack within minutes (ack wait, a few retries with backoff, then parking into the
//   parked stream, which has its own, longer retention).
// A message still unacked after 7 days means a consumer down for a week; the events it missed are
// still in the event store.
export const DEFAULT_STREAM_MAX_AGE_MS = 7 * 24 * 60 * 60_000;
// Parked messages wait for an operator (listParked, replayParked): a month to notice and act.
export const DEFAULT_PARKED_MAX_AGE_MS = 30 * 24 * 60 * 60_000;
