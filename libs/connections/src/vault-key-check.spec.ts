import { Logger } from '@nestjs/common';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { ConnectionSettings } from './connection-settings';
import { TokenVault } from './token-vault';
import { VaultKeyCheck } from './vault-key-check';

const settings = (encryptionKey: string, previousEncryptionKey: string | null = null): ConnectionSettings => ({
  encryptionKey,
  previousEncryptionKey,
  publicBaseUrl: 'http://localhost:3000',
  refreshSweepMs: 60_000,
});
const tokens = { accessToken: 'access-secret', refreshToken: 'refresh-secret', expiresAt: null };

describe('the start-up check of the vault’s keys', () => {
  let reads: SqliteReadStore;
  const [current, previous, lost] = [SecretBox.generateHexKey(), SecretBox.generateHexKey(), SecretBox.generateHexKey()];
  let warn: jest.SpyInstance;
  let log: jest.SpyInstance;

  beforeEach(() => {
    reads = SqliteReadStore.open(':memory:');
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => {
    jest.restoreAllMocks();
    reads.close();
  });

  it('warns with the count of records under a key it does not hold, and says a rotation is unfinished, never naming a secret', async () => {
    await new TokenVault(reads, settings(lost)).store('con_1', tokens);
    await new TokenVault(reads, settings(lost)).store('con_2', tokens);
    await new TokenVault(reads, settings(previous)).store('con_3', tokens);
    await new TokenVault(reads, settings(current)).store('con_4', tokens);
    await new VaultKeyCheck(new TokenVault(reads, settings(current, previous))).check();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatch(
      /^2 vault record\(s\) are sealed with a key that is neither CONNECTION_ENCRYPTION_KEY nor CONNECTION_ENCRYPTION_KEY_PREVIOUS \([0-9a-f]{8}: 2\)/,
    );
    expect(log.mock.calls[0][0]).toMatch(/rotation is under way: [0-9a-f]{8}: 1 record/);
    expect(JSON.stringify([warn.mock.calls, log.mock.calls])).not.toMatch(new RegExp(`secret|${current}|${previous}|${lost}`));
  });

  it('says nothing when every record is under the current key', async () => {
    await new TokenVault(reads, settings(current)).store('con_1', tokens);
    await new VaultKeyCheck(new TokenVault(reads, settings(current, previous))).check();
    expect([warn.mock.calls, log.mock.calls]).toEqual([[], []]);
  });
});
