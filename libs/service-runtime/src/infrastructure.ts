import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { Bus } from '@campaign-ops/bus';
import { InProcessBus, NatsBus, NatsBusOptions } from '@campaign-ops/adapters/bus';
import { EventStore } from '@campaign-ops/event-store';
import { EventStoreDbEventStore, SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { ReadStore } from '@campaign-ops/read-store';
import { MongoReadStore, SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ConfigError, DATA_DIR_FILES, ServiceConfig } from './config';

export interface Infrastructure {
  eventStore: EventStore;
  readStore: ReadStore;
  bus: Bus;
}

const logger = new Logger('infrastructure');
/** The adapters report through the app's JSON log, like everything else (never bare console lines). */
const busLogger = new Logger('bus');
const eventStoreLogger = new Logger('event-store');
const adapterLogger = (nest: Logger) => ({ warn: (message: string) => nest.warn(message), error: (message: string) => nest.error(message) });

/**
 * Connects to one dependency, retrying with backoff while it does not answer, for at most
 * `timeoutMs`; then gives up with an error that names the variable to check.
 */
export async function connectWithRetry<T extends { ping(): Promise<void>; close(): Promise<void> }>(
  what: string,
  variable: string,
  timeoutMs: number,
  connect: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    let connected: T | null = null;
    try {
      // A driver may wait long on its own (server selection, reconnects): no attempt outlives the deadline.
      const remaining = Math.max(250, deadline - Date.now());
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${remaining} ms`)), remaining);
      });
      const connecting = connect();
      try {
        connected = await Promise.race([connecting, timeout]);
        await Promise.race([connected.ping(), timeout]);
      } catch (error) {
        // The attempt lost the race against its deadline but may still connect: close it then,
        // or every slow attempt would leave a connection (and its sockets and timers) behind.
        if (connected === null) void connecting.then((late) => late.close()).catch(() => undefined);
        throw error;
      } finally {
        clearTimeout(timer);
      }
      return connected;
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      await connected?.close().catch(() => undefined);
      const reason = (error as Error).message.split('\n')[0];
      const wait = Math.min(5000, 250 * 2 ** (attempt - 1));
      if (Date.now() + wait > deadline)
        throw new ConfigError(variable, `points at ${what}, which did not answer within ${Math.round(timeoutMs / 1000)} s: ${reason}`);
      logger.warn(`${what} (${variable}) does not answer yet, retrying in ${wait} ms: ${reason}`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * The stores, chosen by configuration, never by code: EventStoreDB when EVENTSTORE_URL is set and
 * MongoDB when MONGODB_URL is set; otherwise the embedded SQLite files in DATA_DIR.
 */
export async function openStores(config: ServiceConfig): Promise<Pick<Infrastructure, 'eventStore' | 'readStore'>> {
  const eventStore = config.eventStoreUrl
    ? await connectWithRetry('EventStoreDB', 'EVENTSTORE_URL', config.startupTimeoutMs, async () => {
        try {
          return EventStoreDbEventStore.connect(config.eventStoreUrl!, {
            logger: adapterLogger(eventStoreLogger),
            credentials: config.eventStoreCredentials ?? undefined,
          });
        } catch (error) {
          throw new ConfigError('EVENTSTORE_URL', `is not a valid EventStoreDB connection string: ${(error as Error).message}`);
        }
      })
    : // Standalone, the one thread that answers requests also runs the pipeline behind them: its
      // commits, each waiting for the disk, are made by a writer thread. The four apps on one
      // machine are short of cores, not of a thread: there a thread more costs more than it saves.
      SqliteEventStore.open(join(config.dataDir, DATA_DIR_FILES.eventStore), { appendsInThread: config.app === 'standalone' });
  try {
    const readStore = config.mongodbUrl
      ? await connectWithRetry('MongoDB', 'MONGODB_URL', config.startupTimeoutMs, () =>
          MongoReadStore.connect(config.mongodbUrl!, { credentials: config.mongodbCredentials ?? undefined }),
        )
      : SqliteReadStore.open(join(config.dataDir, DATA_DIR_FILES.readStore));
    return { eventStore, readStore };
  } catch (error) {
    await eventStore.close();
    throw error;
  }
}

/** The stores and the bus: NATS JetStream when NATS_URL is set, else the durable in-process bus. */
export async function openInfrastructure(config: ServiceConfig): Promise<Infrastructure> {
  const stores = await openStores(config);
  try {
    const bus = config.natsUrl
      ? await connectWithRetry('NATS', 'NATS_URL', config.startupTimeoutMs, () =>
          NatsBus.connect({ servers: config.natsUrl!, name: config.app, ...natsBusOptions(config), logger: adapterLogger(busLogger) }),
        )
      : InProcessBus.open({ file: join(config.dataDir, DATA_DIR_FILES.bus), releaseLeasesOnOpen: true, logger: adapterLogger(busLogger) });
    return { ...stores, bus };
  } catch (error) {
    await stores.eventStore.close();
    await stores.readStore.close();
    throw error;
  }
}

export async function closeInfrastructure(infrastructure: Infrastructure): Promise<void> {
  await infrastructure.bus.close();
  await infrastructure.eventStore.close();
  await infrastructure.readStore.close();
}

/** The settings of the app's NATS connection beside the servers and name: replicas, user, TLS, and whether it sets the streams up. */
export function natsBusOptions(config: ServiceConfig): Pick<NatsBusOptions, 'streamReplicas' | 'credentials' | 'tlsCaFile' | 'manageStreams'> {
  return {
    streamReplicas: config.natsStreamReplicas,
    credentials: config.natsCredentials ?? undefined,
    tlsCaFile: config.natsTlsCaFile ?? undefined,
    manageStreams: config.natsManageStreams,
  };
}
