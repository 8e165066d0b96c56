import Database from 'better-sqlite3';

/** How long a connection waits for another connection's lock before failing with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5_000;
/**
 * The page cache of each connection, in KiB. SQLite's build in better-sqlite3 defaults to 16 MiB a
 * connection, up to 80 MB for a process's five, which the bench's load filled at about 10 MB per
 * 2,000 launches without a faster launch: the pages a store touches again are its last ones, and
 * the kernel's page cache holds the rest. Measured: 4 MiB is as fast at full load and keeps the
 * process's peak about 30 MB lower.
 */
export const PAGE_CACHE_KIB = 4_096;
/** Between two tries of the switch to WAL: a few milliseconds, spread so that racing processes part. */
const RETRY_PAUSE_MS = { min: 5, spread: 20 };

/**
 * Opens `file` (created if missing) in WAL mode for a store that several processes share: with
 * the busy timeout set, then journal_mode = WAL, which is persistent, so in practice only the first
 * process to open a new file converts it.
 *
 * The switch is retried until the busy timeout has passed: on a new file, a process that finds
 * another one converting it (holding the write lock of the rollback journal) gets SQLITE_BUSY at
 * once, without SQLite's busy handler, which never waits for a lock that a connection reading the
 * file would need to upgrade. Seen when replicas start together on a fresh DATA_DIR. `:memory:`
 * has no WAL; it stays in memory mode. The page cache is PAGE_CACHE_KIB unless `cacheKib` says.
 */
export function openWal(file: string, options: { busyTimeoutMs?: number; cacheKib?: number } = {}): Database.Database {
  const busyTimeoutMs = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
  const db = new Database(file, { timeout: busyTimeoutMs });
  try {
    db.pragma(`cache_size = -${Math.trunc(options.cacheKib ?? PAGE_CACHE_KIB)}`);
    const deadline = Date.now() + busyTimeoutMs;
    for (;;) {
      try {
        db.pragma('journal_mode = WAL');
        return db;
      } catch (error) {
        if (!isBusy(error) || Date.now() >= deadline) throw error;
        pause(RETRY_PAUSE_MS.min + Math.random() * RETRY_PAUSE_MS.spread);
      }
    }
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * By its code, not `instanceof SqliteError`: better-sqlite3's native part throws the class of the
 * first copy of the module that loaded it, and a process may hold several copies (Jest loads one
 * per test file).
 */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Opening is synchronous (better-sqlite3 is), so is its pause: it happens once, at start-up. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
