export * from './read-store.port';
export { SqliteReadStore } from './sqlite-read-store';
export { MongoReadStore, type MongoReadStoreOptions } from './mongo-read-store';
export { StandInWriter } from './rebuild-writer';
