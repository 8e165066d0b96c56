export { GroupCommit } from './group-commit';
export { BUSY_TIMEOUT_MS, openWal } from './open-wal';
