export * from './read-store.port';
export { SqliteReadStore } from './sqlite-read-store';
