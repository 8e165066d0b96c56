/**
 * The read store's adapters (`@campaign-ops/adapters/read-store`): SQLite (embedded) and MongoDB.
 * The port is `@campaign-ops/read-store`. MongoDB's module, with its driver (about 23 MB of a
 * process's memory), loads on the first use of MongoReadStore, so a process on the embedded store
 * never loads it.
 */
import type * as Mongo from '../mongo-read-store';

export { SqliteReadStore } from '../sqlite-read-store';
export { StandInWriter } from '../rebuild-writer';
export type { MongoReadStoreOptions } from '../mongo-read-store';
export type MongoReadStore = Mongo.MongoReadStore;
export declare const MongoReadStore: typeof Mongo.MongoReadStore;

Object.defineProperty(exports, 'MongoReadStore', {
  enumerable: true,
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  get: () => (require('../mongo-read-store') as typeof Mongo).MongoReadStore,
});
