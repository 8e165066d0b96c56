/** The read store's adapters (`@campaign-ops/adapters/read-store`): SQLite (embedded) and MongoDB. The port is `@campaign-ops/read-store`. */
export { SqliteReadStore } from '../sqlite-read-store';
export { MongoReadStore, type MongoReadStoreOptions } from '../mongo-read-store';
export { StandInWriter } from '../rebuild-writer';
