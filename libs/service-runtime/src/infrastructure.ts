import { join } from 'node:path';
import { Bus, InProcessBus, NatsBus } from '@campaign-ops/bus';
import { EventStore, SqliteEventStore } from '@campaign-ops/event-store';
import { ReadStore, SqliteReadStore } from '@campaign-ops/read-store';
import { ServiceConfig } from './config';

export interface Infrastructure {
  eventStore: EventStore;
  readStore: ReadStore;
  bus: Bus;
}

/**
 * Chooses the adapters from configuration, never from code: NATS when NATS_URL is set, else the
 * in-process bus; the embedded SQLite stores in DATA_DIR. (EventStoreDB and MongoDB slot in here.)
 */
export function openStores(config: ServiceConfig): Pick<Infrastructure, 'eventStore' | 'readStore'> {
  return {
    eventStore: SqliteEventStore.open(join(config.dataDir, 'events.sqlite')),
    readStore: SqliteReadStore.open(join(config.dataDir, 'read-models.sqlite')),
  };
}

export async function openInfrastructure(config: ServiceConfig): Promise<Infrastructure> {
  const { eventStore, readStore } = openStores(config);
  const bus = config.natsUrl
    ? await NatsBus.connect({ servers: config.natsUrl, name: config.app })
    : InProcessBus.open({ file: join(config.dataDir, 'bus.sqlite'), releaseLeasesOnOpen: true });
  return { eventStore, readStore, bus };
}

export async function closeInfrastructure(infrastructure: Infrastructure): Promise<void> {
  await infrastructure.bus.close();
  await infrastructure.eventStore.close();
  await infrastructure.readStore.close();
}
