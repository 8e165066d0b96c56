export * from './event-store.port';
export * from './event-store-logger';
