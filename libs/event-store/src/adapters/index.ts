/** The event store's adapters (`@campaign-ops/adapters/event-store`): SQLite (embedded) and EventStoreDB. The port is `@campaign-ops/event-store`. */
export * from '../sqlite-event-store';
export * from '../eventstoredb-event-store';
