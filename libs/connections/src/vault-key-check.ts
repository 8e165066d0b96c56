import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { KeyCount, TokenVault } from './token-vault';

/**
 * At start-up, in the background: how many vault records each key sealed. Records under a key that
 * is neither CONNECTION_ENCRYPTION_KEY nor CONNECTION_ENCRYPTION_KEY_PREVIOUS cannot be opened (their
 * connections fail with reauth_required when used): a warning counts them. Records still under the
 * previous key mean a rotation is not finished (`ops vault reseal`). Key ids and counts only, never
 * a secret.
 */
@Injectable()
export class VaultKeyCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('token-vault');

  constructor(private readonly vault: TokenVault) {}

  onApplicationBootstrap(): void {
    void this.check().catch((error: Error) => this.logger.warn(`could not count the vault's records per key: ${error.message}`));
  }

  async check(): Promise<void> {
    const counts = await this.vault.keyCounts();
    const of = (key: KeyCount['key']) => counts.filter((count) => count.key === key && count.records > 0);
    const listed = (list: KeyCount[]) => list.map((count) => `${count.keyId}: ${count.records}`).join(', ');
    const unknown = of('unknown');
    if (unknown.length > 0) {
      const records = unknown.reduce((sum, count) => sum + count.records, 0);
      this.logger.warn(
        `${records} vault record(s) are sealed with a key that is neither CONNECTION_ENCRYPTION_KEY nor CONNECTION_ENCRYPTION_KEY_PREVIOUS (${listed(unknown)}): ` +
          'their connections need to be authorized again, unless that key is set as CONNECTION_ENCRYPTION_KEY_PREVIOUS (docs/operations.md: Rotating the token key)',
      );
    }
    const previous = of('previous');
    if (previous.length > 0)
      this.logger.log(`a rotation is under way: ${listed(previous)} record(s) under the previous key; \`ops vault reseal\` seals them with the current one`);
  }
}
