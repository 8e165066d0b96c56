import { GenericContainer, StartedTestContainer, Wait } from 'testcontainers';
import { EventStoreDbEventStore } from '../eventstoredb-event-store';

export { eventStoreContract } from './event-store.contract';

const ESDB_IMAGE = 'eventstore/eventstore:24.10';
const HTTP_PORT = 2113;

/**
 * A throwaway EventStoreDB (in memory, insecure) for the testcontainers suites, answered once a
 * single node has elected itself leader and serves reads (live is not yet ready). Call inside
 * `describeWithContainers`.
 */
export async function startEventStoreDb(): Promise<{ connectionString: string; stop(): Promise<void> }> {
  const container: StartedTestContainer = await new GenericContainer(ESDB_IMAGE)
    .withEnvironment({ EVENTSTORE_INSECURE: 'true', EVENTSTORE_RUN_PROJECTIONS: 'None', EVENTSTORE_MEM_DB: 'true' })
    .withExposedPorts(HTTP_PORT)
    .withWaitStrategy(Wait.forHttp('/health/live', HTTP_PORT).forStatusCodeMatching((code) => code >= 200 && code < 300))
    .withStartupTimeout(180_000)
    .start();
  const connectionString = `esdb://${container.getHost()}:${container.getMappedPort(HTTP_PORT)}?tls=false`;
  const store = EventStoreDbEventStore.connect(connectionString);
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await store.ping();
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  } finally {
    await store.close();
  }
  return { connectionString, stop: async () => void (await container.stop()) };
}
export { FakeEventStoreDb, notLeader, unavailable, invalidPosition } from './fake-eventstoredb';
export * from './seeded-random';
