/**
 * The event store's adapters (`@campaign-ops/adapters/event-store`): SQLite (embedded) and
 * EventStoreDB. The port is `@campaign-ops/event-store`. EventStoreDB's module, with its gRPC
 * client (about 11 MB of a process's memory), loads on the first use of one of its exports, so a
 * process on the embedded store never loads it.
 */
import type * as EventStoreDb from '../eventstoredb-event-store';

export * from '../sqlite-event-store';
export { SubscriptionPositionRefusedError } from '../event-store.port';
export type { EventStoreDbClientLike, EventStoreDbOptions } from '../eventstoredb-event-store';
export type EventStoreDbEventStore = EventStoreDb.EventStoreDbEventStore;
export type EventStoreTimeoutError = EventStoreDb.EventStoreTimeoutError;
export type NotLeaderRetriesExhaustedError = EventStoreDb.NotLeaderRetriesExhaustedError;
export type UndeliverableEventError = EventStoreDb.UndeliverableEventError;
export declare const EventStoreDbEventStore: typeof EventStoreDb.EventStoreDbEventStore;
export declare const EventStoreTimeoutError: typeof EventStoreDb.EventStoreTimeoutError;
export declare const NotLeaderRetriesExhaustedError: typeof EventStoreDb.NotLeaderRetriesExhaustedError;
export declare const UndeliverableEventError: typeof EventStoreDb.UndeliverableEventError;
export declare const withUserInfo: typeof EventStoreDb.withUserInfo;

for (const name of ['EventStoreDbEventStore', 'EventStoreTimeoutError', 'NotLeaderRetriesExhaustedError', 'UndeliverableEventError', 'withUserInfo'] as const)
  Object.defineProperty(exports, name, {
    enumerable: true,
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    get: () => (require('../eventstoredb-event-store') as typeof EventStoreDb)[name],
  });
