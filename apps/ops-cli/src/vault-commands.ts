import { KeyCount, TokenVault } from '@campaign-ops/connections';
import type { ReadStore } from '@campaign-ops/read-store';
import type { ConnectionSettings } from '@campaign-ops/service-runtime';
import type { Outcome } from './audit-commands';
import { progressOn } from './progress';

export const VAULT_USAGE = `  vault status                                     the token vault's records per key id: current
                                                   (CONNECTION_ENCRYPTION_KEY), previous (…_PREVIOUS), unknown
  vault reseal                                     seal every record of the previous key with the current one
                                                   (resumable; a refresh meanwhile wins); exit 1 while any
                                                   record is left under another key`;

export class VaultUsageError extends Error {}

/** `ops vault status|reseal`, on the read store of DATA_DIR / MONGODB_URL, with the keys connection-service has. */
export async function runVault(action: string | undefined, readStore: ReadStore, settings: ConnectionSettings): Promise<Outcome> {
  if (action !== 'status' && action !== 'reseal') throw new VaultUsageError(`unknown command: vault ${action ?? ''}`);
  if (!settings.encryptionKey)
    throw new VaultUsageError(
      'vault needs CONNECTION_ENCRYPTION_KEY (and CONNECTION_ENCRYPTION_KEY_PREVIOUS during a rotation), as connection-service has them',
    );
  const vault = new TokenVault(readStore, settings);
  const before = await vault.keyCounts();
  if (action === 'status') return { text: table(before), json: { keys: before }, code: 0 };
  const toDo = before.filter((count) => count.key === 'previous').reduce((sum, count) => sum + count.records, 0);
  const progress = progressOn(process.stderr, 'resealing', 'records');
  const report = await vault.reseal((so) =>
    progress.update(so.resealed + so.changedMeanwhile, toDo === 0 ? 1 : Math.min(1, (so.resealed + so.changedMeanwhile) / toDo)),
  );
  progress.stop();
  const after = await vault.keyCounts();
  const left = after.filter((count) => count.key !== 'current' && count.records > 0);
  const text = [
    'before:',
    table(before),
    `resealed ${report.resealed}, rewritten meanwhile ${report.changedMeanwhile}, under an unknown key ${report.unreadable}`,
    'after:',
    table(after),
    ...(left.some((count) => count.key === 'unknown')
      ? [
          'records under an unknown key stay unreadable: set that key as CONNECTION_ENCRYPTION_KEY_PREVIOUS and run this again, or have those connections reauthorized',
        ]
      : []),
  ].join('\n');
  return { text, json: { before, report, after }, code: left.length > 0 ? 1 : 0 };
}

function table(counts: KeyCount[]): string {
  return counts.map((count) => `  ${count.keyId}  ${count.key.padEnd(8)}  ${count.records}`).join('\n');
}
