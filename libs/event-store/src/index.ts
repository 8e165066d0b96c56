export * from './event-store.port';
export * from './sqlite-event-store';
export * from './event-store-logger';
export * from './eventstoredb-event-store';
