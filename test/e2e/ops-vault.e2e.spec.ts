/**
 * Finishing a key rotation (docs/operations.md, "Rotating the token key"): `ops vault status` counts the token vault's
 * records per key, `ops vault reseal` seals those of the previous key with the current one, as the
 * operators run them, on the read store of DATA_DIR.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenVault } from '@campaign-ops/connections';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { runOps } from '../support/ops-cli';

const keyId = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex').slice(0, 8);
const settings = (encryptionKey: string, previousEncryptionKey: string | null = null) => ({
  encryptionKey,
  previousEncryptionKey,
  publicBaseUrl: 'http://localhost:3000',
  refreshSweepMs: 60_000,
});

describe('ops vault', () => {
  const [oldKey, newKey, lostKey] = [SecretBox.generateHexKey(), SecretBox.generateHexKey(), SecretBox.generateHexKey()];
  let dataDir: string;
  const env = () => ({ DATA_DIR: dataDir, CONNECTION_ENCRYPTION_KEY: newKey, CONNECTION_ENCRYPTION_KEY_PREVIOUS: oldKey });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-vault-'));
    const reads = SqliteReadStore.open(join(dataDir, 'read-models.sqlite'));
    const tokens = { accessToken: 'access-secret', refreshToken: 'refresh-secret', expiresAt: null };
    for (let i = 1; i <= 150; i++) await new TokenVault(reads, settings(oldKey)).store(`con_${String(i).padStart(3, '0')}`, tokens);
    await new TokenVault(reads, settings(newKey)).store('con_new', tokens);
    await new TokenVault(reads, settings(lostKey)).store('con_lost', tokens);
    reads.close();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('counts the records per key id, saying which is current, previous and unknown', async () => {
    const run = await runOps(['vault', 'status', '--json'], env());
    expect(run.code).toBe(0);
    expect(run.json.keys).toEqual(
      expect.arrayContaining([
        { keyId: keyId(newKey), key: 'current', records: 1 },
        { keyId: keyId(oldKey), key: 'previous', records: 150 },
        { keyId: keyId(lostKey), key: 'unknown', records: 1 },
      ]),
    );
    expect(run.stdout + run.stderr).not.toContain('secret');
  });

  it('reseals the previous key’s records with the current one (counts before and after), and exits 1 while a record stays under an unknown key', async () => {
    const run = await runOps(['vault', 'reseal'], env());
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`${keyId(oldKey)}  previous  150`);
    expect(run.stdout).toContain('resealed 150, rewritten meanwhile 0, under an unknown key 1');
    expect(run.stdout).toMatch(new RegExp(`after:\\n  ${keyId(newKey)}  current   151\\n  ${keyId(lostKey)}  unknown   1`));
    expect(run.stdout).toContain('stay unreadable');
    expect(run.stderr).toMatch(/resealing/);
    // Done: the old key is no longer needed for any record it sealed.
    const again = await runOps(['vault', 'status', '--json'], {
      DATA_DIR: dataDir,
      CONNECTION_ENCRYPTION_KEY: newKey,
      CONNECTION_ENCRYPTION_KEY_PREVIOUS: lostKey,
    });
    expect(again.json.keys).toEqual([
      { keyId: keyId(newKey), key: 'current', records: 151 },
      { keyId: keyId(lostKey), key: 'previous', records: 1 },
    ]);
    const finished = await runOps(['vault', 'reseal', '--json'], {
      DATA_DIR: dataDir,
      CONNECTION_ENCRYPTION_KEY: newKey,
      CONNECTION_ENCRYPTION_KEY_PREVIOUS: lostKey,
    });
    expect([finished.code, finished.json.report]).toEqual([0, { resealed: 1, changedMeanwhile: 0, unreadable: 0 }]);
  });

  it('refuses to run without the current key', async () => {
    const run = await runOps(['vault', 'status'], { DATA_DIR: mkdtempSync(join(tmpdir(), 'campaign-ops-vault-nokey-')) });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/vault needs CONNECTION_ENCRYPTION_KEY/);
  });
});
