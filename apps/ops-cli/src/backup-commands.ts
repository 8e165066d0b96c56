import { resolve } from 'node:path';
import type { ServiceConfig } from '@campaign-ops/service-runtime';
import type { Outcome } from './audit-commands';
import { BackupFile, backupStores, BackupRefused, restoreStores } from './store-backup';

export const BACKUP_USAGE = `  backup --out DIR                                 consistent copies of DATA_DIR's stores and keys (events,
                                                   read-models and bus .sqlite, generated-keys.json) taken while
                                                   the service runs, and DIR/backup-manifest.json (each file's
                                                   bytes and SHA-256, the event store's head); DIR new or empty. Only
                                                   the embedded stores: refused with EVENTSTORE_URL, MONGODB_URL
                                                   or NATS_URL set (docs/operations.md)
  restore --from DIR [--force]                     the service stopped: check every file of the backup against
                                                   its manifest (exit 1 naming the first that differs or is
                                                   missing), then copy them into DATA_DIR; a DATA_DIR that holds
                                                   a store already is refused unless --force (which replaces it)`;

export class BackupUsageError extends Error {}

type Values = Record<string, string | boolean | string[] | undefined>;

const path = (values: Values, name: string, command: string): string => {
  const given = values[name];
  if (typeof given !== 'string' || given === '') throw new BackupUsageError(`${command} needs --${name} DIR`);
  return resolve(given);
};

/** The stores that are servers have their own backups: this copies only the embedded files. */
function refuseExternalStores(config: ServiceConfig, command: string): void {
  const set = [
    ['EVENTSTORE_URL', config.eventStoreUrl],
    ['MONGODB_URL', config.mongodbUrl],
    ['NATS_URL', config.natsUrl],
  ].filter(([, value]) => value);
  if (set.length > 0)
    throw new BackupUsageError(
      `${command} is for the embedded stores of DATA_DIR, and ${set.map(([name]) => name).join(', ')} is set: back these up with their own tools: docs/operations.md`,
    );
}

const fileList = (files: BackupFile[]) => files.map((file) => `  ${file.name}  ${file.bytes} bytes  sha256 ${file.sha256}`).join('\n');

export async function runBackup(config: ServiceConfig, values: Values): Promise<Outcome> {
  const out = path(values, 'out', 'backup');
  refuseExternalStores(config, 'backup');
  try {
    const manifest = await backupStores(config.dataDir, out);
    return {
      json: { ...manifest, out },
      text: `backed up ${config.dataDir} to ${out} (event store head ${manifest.event_store_head ?? '-'})\n${fileList(manifest.files)}\nmanifest ${out}/backup-manifest.json`,
      code: 0,
    };
  } catch (error) {
    throw error instanceof BackupRefused ? new BackupUsageError(error.message) : error;
  }
}

export async function runRestore(config: ServiceConfig, values: Values): Promise<Outcome> {
  const from = path(values, 'from', 'restore');
  refuseExternalStores(config, 'restore');
  try {
    const manifest = restoreStores(from, config.dataDir, { force: values.force === true });
    return {
      json: { restored: manifest.files, data_dir: config.dataDir, event_store_head: manifest.event_store_head, backup_created_at: manifest.created_at },
      text: `restored the backup of ${manifest.created_at} from ${from} into ${config.dataDir} (event store head ${manifest.event_store_head ?? '-'})\n${fileList(manifest.files)}`,
      code: 0,
    };
  } catch (error) {
    throw error instanceof BackupRefused ? new BackupUsageError(error.message) : error;
  }
}
