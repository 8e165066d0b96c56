import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { copyDurably, syncDirectoryOf, syncFile, writeDurably } from '@campaign-ops/event-export';
import { DATA_DIR_FILES } from '@campaign-ops/service-runtime';
import { BUSY_TIMEOUT_MS } from '@campaign-ops/sqlite-wal';

/**
 * What a standalone process keeps in DATA_DIR, in the order a backup copies it: the keys (only
 * ever added to), the read models and the bus, then the event store last, so that every copy is
 * at or behind the event store's copy: on a restore the projections and the relay catch up from
 * their checkpoints, as after any restart, and none is ahead of the store.
 */
export const KEY_FILES: string[] = [DATA_DIR_FILES.generatedKeys];
export const EVENT_STORE_FILE = DATA_DIR_FILES.eventStore;
export const DATABASES: string[] = [DATA_DIR_FILES.readStore, DATA_DIR_FILES.bus, EVENT_STORE_FILE];
export const STORE_FILES = [...KEY_FILES, ...DATABASES];
export const BACKUP_MANIFEST = 'backup-manifest.json';

export interface BackupFile {
  name: string;
  bytes: number;
  sha256: string;
}

export interface BackupManifest {
  format: 'campaign-ops-backup/1';
  files: BackupFile[];
  /** The last position of the event store's copy (null when it holds no event). */
  event_store_head: string | null;
  created_at: string;
}

/** The backup or restore cannot start as things are (nothing was written). */
export class BackupRefused extends Error {}

/** The backup does not hold what its manifest says (nothing was restored). */
export class BackupDamaged extends Error {}

/**
 * Copies the stores of `dataDir` into the empty or new directory `out`, while the services may
 * write to them. Each database is copied with SQLite's online backup in a single step, which reads
 * one snapshot of the file (WAL: writers go on meanwhile); several steps would start over at every
 * write another process makes. Every copy gets its name once its bytes are on disk, the manifest
 * last: a directory without backup-manifest.json is no backup.
 */
export async function backupStores(dataDir: string, out: string): Promise<BackupManifest> {
  if (!existsSync(join(dataDir, EVENT_STORE_FILE)))
    throw new BackupRefused(`DATA_DIR ${dataDir} holds no event store (${EVENT_STORE_FILE}): nothing to back up`);
  if (existsSync(out) && (!statSync(out).isDirectory() || readdirSync(out).length > 0))
    throw new BackupRefused(`--out ${out} exists and is not an empty directory: a backup goes into a new one`);
  // The copies hold the keys that seal webhook secrets and provider tokens.
  mkdirSync(out, { recursive: true, mode: 0o700 });
  const files: BackupFile[] = [];
  for (const name of KEY_FILES.filter((key) => existsSync(join(dataDir, key)))) {
    writeDurably(join(out, name), readFileSync(join(dataDir, name), 'utf8'), 0o600);
    files.push(describeFile(out, name));
  }
  let head: string | null = null;
  for (const name of DATABASES.filter((database) => existsSync(join(dataDir, database)))) {
    const copy = join(out, name);
    await copyDatabase(join(dataDir, name), `${copy}.partial`);
    if (name === EVENT_STORE_FILE) head = headOf(`${copy}.partial`);
    syncFile(`${copy}.partial`);
    renameSync(`${copy}.partial`, copy);
    files.push(describeFile(out, name));
  }
  const manifest: BackupManifest = { format: 'campaign-ops-backup/1', files, event_store_head: head, created_at: new Date().toISOString() };
  writeDurably(join(out, BACKUP_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  syncDirectoryOf(join(out, BACKUP_MANIFEST));
  return manifest;
}

async function copyDatabase(from: string, to: string): Promise<void> {
  const source = new Database(from, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    // The first step only opens the backup; the second copies every page under one read transaction.
    await source.backup(to, { progress: () => 0x7fffffff });
  } finally {
    source.close();
  }
}

/** The event store's last position, read from the copy (its last connection closed, it keeps no -wal or -shm beside it). */
function headOf(file: string): string | null {
  const db = new Database(file, { fileMustExist: true });
  try {
    const { head } = db.prepare('SELECT MAX(position) AS head FROM events').get() as { head: number | null };
    return head === null ? null : String(head);
  } finally {
    db.close();
  }
}

function describeFile(dir: string, name: string): BackupFile {
  const file = join(dir, name);
  return { name, bytes: statSync(file).size, sha256: sha256Of(file) };
}

function sha256Of(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** The manifest of the backup in `from`, every file it names checked for its size and SHA-256. */
export function checkedBackup(from: string): BackupManifest {
  const manifestFile = join(from, BACKUP_MANIFEST);
  if (!existsSync(manifestFile)) throw new BackupDamaged(`${from} holds no ${BACKUP_MANIFEST}: not a backup, or one that did not finish`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as BackupManifest;
  if (manifest.format !== 'campaign-ops-backup/1' || !Array.isArray(manifest.files))
    throw new BackupDamaged(`${manifestFile} is not a campaign-ops backup manifest (format campaign-ops-backup/1)`);
  for (const { name } of manifest.files)
    if (!STORE_FILES.includes(name)) throw new BackupDamaged(`${manifestFile} names ${name}, which is none of ${STORE_FILES.join(', ')}`);
  if (!manifest.files.some((file) => file.name === EVENT_STORE_FILE)) throw new BackupDamaged(`${manifestFile} holds no ${EVENT_STORE_FILE}`);
  for (const expected of manifest.files) {
    const file = join(from, expected.name);
    if (!existsSync(file)) throw new BackupDamaged(`${expected.name} is missing from ${from}`);
    const found = describeFile(from, expected.name);
    if (found.bytes !== expected.bytes) throw new BackupDamaged(`${expected.name}: ${found.bytes} bytes, the manifest says ${expected.bytes}`);
    if (found.sha256 !== expected.sha256) throw new BackupDamaged(`${expected.name}: SHA-256 ${found.sha256}, the manifest says ${expected.sha256}`);
  }
  return manifest;
}

/**
 * Restores the backup in `from` into `dataDir`, whose services must be stopped. Every file is
 * checked before any is copied; a DATA_DIR that holds stores already is refused unless `force`.
 * A restored database's stale -wal and -shm go before the copy takes its name: SQLite would
 * otherwise replay another file's log into it.
 */
export function restoreStores(from: string, dataDir: string, options: { force?: boolean } = {}): BackupManifest {
  const manifest = checkedBackup(from);
  const present = STORE_FILES.filter((name) => existsSync(join(dataDir, name)));
  if (present.length > 0 && !options.force)
    throw new BackupRefused(`DATA_DIR ${dataDir} holds ${present.join(', ')} already: restore into an empty one, or replace them with --force`);
  mkdirSync(dataDir, { recursive: true });
  for (const { name } of manifest.files) {
    const target = join(dataDir, name);
    if (DATABASES.includes(name)) for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
    copyDurably(join(from, name), target);
    // Whatever became of the backup's modes, the keys are for this user only.
    if (KEY_FILES.includes(name)) chmodSync(target, 0o600);
  }
  syncDirectoryOf(join(dataDir, EVENT_STORE_FILE));
  return manifest;
}
