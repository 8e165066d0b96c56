export { GroupCommit } from './group-commit';
export { BUSY_TIMEOUT_MS, openWal, PAGE_CACHE_KIB } from './open-wal';
