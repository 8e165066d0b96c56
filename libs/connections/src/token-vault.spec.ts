import { createHash } from 'node:crypto';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { ConnectionSettings } from './connection-settings';
import { TokenVault, UnreadableTokensError } from './token-vault';

const settings = (encryptionKey: string, previousEncryptionKey: string | null = null): ConnectionSettings => ({
  encryptionKey,
  previousEncryptionKey,
  publicBaseUrl: 'http://localhost:3000',
  refreshSweepMs: 60_000,
});
const keyId = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex').slice(0, 8);
const tokens = { accessToken: 'EAAB-access-secret', refreshToken: 'refresh-secret', expiresAt: '2026-12-01T00:00:00.000Z' };

describe('the token vault', () => {
  let reads: SqliteReadStore;
  const oldKey = SecretBox.generateHexKey();
  const newKey = SecretBox.generateHexKey();
  const raw = () => reads.collection<{ id: string } & Record<string, unknown>>('connection_tokens');

  beforeEach(() => {
    reads = SqliteReadStore.open(':memory:');
  });
  afterEach(() => reads.close());

  it('keeps tokens sealed with AES-256-GCM, the key id beside them, and opens them', async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    const record = await raw().get('con_1');
    expect(JSON.stringify(record)).not.toContain('secret');
    expect(record).toMatchObject({ key_id: keyId(newKey), sealed: expect.stringMatching(/^v1\./), expires_at: tokens.expiresAt, version: 1 });
    expect(await vault.read('con_1')).toMatchObject({ ...tokens, version: 1, refreshedAt: null });
    expect(await vault.read('con_2')).toBeNull();
  });

  it('opens values of the previous key after a rotation, and seals them with the new key on their next write', async () => {
    await new TokenVault(reads, settings(oldKey)).store('con_1', tokens);
    const rotated = new TokenVault(reads, settings(newKey, oldKey));
    expect(await rotated.read('con_1')).toMatchObject(tokens);
    await rotated.store('con_1', { ...tokens, accessToken: 'next' });
    expect(await raw().get('con_1')).toMatchObject({ key_id: keyId(newKey), version: 2 });
    expect(await new TokenVault(reads, settings(newKey)).read('con_1')).toMatchObject({ accessToken: 'next' });
  });

  it('refuses a value sealed with a key it does not have, naming the setting that would open it', async () => {
    await new TokenVault(reads, settings(oldKey)).store('con_1', tokens);
    await expect(new TokenVault(reads, settings(newKey)).read('con_1')).rejects.toThrow(
      new RegExp(`sealed with key ${keyId(oldKey)}.*CONNECTION_ENCRYPTION_KEY_PREVIOUS`),
    );
  });

  it('refuses it with an UnreadableTokensError naming the connection and the key', async () => {
    await new TokenVault(reads, settings(oldKey)).store('con_1', tokens);
    const error = await new TokenVault(reads, settings(newKey)).read('con_1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnreadableTokensError);
    expect(error).toMatchObject({ name: 'UnreadableTokensError', connectionId: 'con_1', keyId: keyId(oldKey) });
  });

  describe('counting and resealing after a rotation', () => {
    const lostKey = SecretBox.generateHexKey();

    /** con_1..con_3 under the old key, con_4 under the new one, con_5 under a key since lost. */
    const seeded = async () => {
      for (const id of ['con_1', 'con_2', 'con_3']) await new TokenVault(reads, settings(oldKey)).store(id, { ...tokens, accessToken: `access-${id}` });
      await new TokenVault(reads, settings(newKey)).store('con_4', tokens);
      await new TokenVault(reads, settings(lostKey)).store('con_5', tokens);
      return new TokenVault(reads, settings(newKey, oldKey));
    };

    it('counts the records of each key id, saying which key it is to this vault (the current one listed even when empty)', async () => {
      expect(await new TokenVault(reads, settings(newKey)).keyCounts()).toEqual([{ keyId: keyId(newKey), key: 'current', records: 0 }]);
      const counts = await (await seeded()).keyCounts();
      expect(counts[0]).toEqual({ keyId: keyId(newKey), key: 'current', records: 1 });
      expect(counts.slice(1)).toEqual(
        [
          { keyId: keyId(oldKey), key: 'previous', records: 3 },
          { keyId: keyId(lostKey), key: 'unknown', records: 1 },
        ].sort((a, b) => a.keyId.localeCompare(b.keyId)),
      );
    });

    it("seals every record of the previous key with the current one, tokens and versions unchanged, and leaves the unknown key's alone", async () => {
      const vault = await seeded();
      const pages: unknown[] = [];
      expect(await vault.reseal((page) => pages.push(page))).toEqual({ resealed: 3, changedMeanwhile: 0, unreadable: 1 });
      expect(pages.length).toBeGreaterThanOrEqual(2);
      const counts = Object.fromEntries((await vault.keyCounts()).map((count) => [count.key, count.records]));
      expect(counts).toEqual({ current: 4, unknown: 1 });
      const withoutPrevious = new TokenVault(reads, settings(newKey));
      for (const id of ['con_1', 'con_2', 'con_3']) expect(await withoutPrevious.read(id)).toMatchObject({ accessToken: `access-${id}`, version: 1 });
      expect(await vault.reseal()).toEqual({ resealed: 0, changedMeanwhile: 0, unreadable: 1 });
    });

    it('walks every page: 250 records under the previous key, sealed again 100 at a time', async () => {
      const old = new TokenVault(reads, settings(oldKey));
      for (let i = 0; i < 250; i++) await old.store(`con_${String(i).padStart(3, '0')}`, tokens);
      const pages: number[] = [];
      const vault = new TokenVault(reads, settings(newKey, oldKey));
      expect(await vault.reseal((page) => pages.push(page.resealed))).toEqual({ resealed: 250, changedMeanwhile: 0, unreadable: 0 });
      expect(pages).toEqual([100, 200, 250]);
      expect(await vault.keyCounts()).toEqual([{ keyId: keyId(newKey), key: 'current', records: 250 }]);
    });

    it('lists the current key first whatever its id, the others by id', async () => {
      // A current key whose id sorts after the others'.
      let current = SecretBox.generateHexKey();
      while (keyId(current) < keyId(oldKey) || keyId(current) < keyId(lostKey)) current = SecretBox.generateHexKey();
      await new TokenVault(reads, settings(oldKey)).store('con_1', tokens);
      await new TokenVault(reads, settings(lostKey)).store('con_2', tokens);
      const counts = await new TokenVault(reads, settings(current, oldKey)).keyCounts();
      expect(counts.map((count) => count.key)).toEqual(['current', ...(keyId(oldKey) < keyId(lostKey) ? ['previous', 'unknown'] : ['unknown', 'previous'])]);
    });

    it('asks the store for an index on key_id (the counts and the reseal filter on it)', () => {
      const collection = jest.spyOn(reads, 'collection');
      new TokenVault(reads, settings(newKey));
      expect(collection).toHaveBeenCalledWith('connection_tokens', { indexes: ['key_id'] });
    });

    it('lets a refresh that read the record before the reseal keep its tokens (the reseal changes no version)', async () => {
      const vault = await seeded();
      const before = await vault.read('con_1');
      await vault.reseal();
      expect(await vault.refreshed('con_1', before!.version, { ...tokens, accessToken: 'refreshed' }, '2026-11-28T10:00:00.000Z')).toBe(true);
      expect(await vault.read('con_1')).toMatchObject({ accessToken: 'refreshed', version: 2 });
    });

    it('leaves a record rewritten while it was being resealed to its writer', async () => {
      const vault = await seeded();
      const records = raw();
      const original = records.update.bind(records);
      // A refresh lands between the reseal's read and its write of con_2.
      jest.spyOn(records, 'update').mockImplementation(async (id, patch, where) => {
        if (id === 'con_2' && where?.key_id)
          await new TokenVault(reads, settings(newKey, oldKey)).refreshed('con_2', 1, { ...tokens, accessToken: 'refreshed' }, '2026-11-28T10:00:00.000Z');
        return original(id, patch, where);
      });
      const resealing = new TokenVault({ collection: () => records } as never, settings(newKey, oldKey));
      expect(await resealing.reseal()).toEqual({ resealed: 2, changedMeanwhile: 1, unreadable: 1 });
      expect(await vault.read('con_2')).toMatchObject({ accessToken: 'refreshed', version: 2 });
    });
  });

  it("refuses one connection's sealed tokens copied onto another's record", async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    await vault.store('con_2', { ...tokens, accessToken: 'other' });
    await raw().update('con_2', { sealed: (await raw().get('con_1'))!.sealed });
    await expect(vault.read('con_2')).rejects.toThrow(/belong to another connection/);
  });

  it('keeps refreshed tokens only over the version it read (a refresh elsewhere wins)', async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    expect(await vault.refreshed('con_1', 1, { ...tokens, accessToken: 'mine' }, '2026-11-24T10:01:00.000Z')).toBe(true);
    expect(await vault.refreshed('con_1', 1, { ...tokens, accessToken: 'late' }, '2026-11-24T10:01:00.000Z')).toBe(false);
    expect(await vault.read('con_1')).toMatchObject({ accessToken: 'mine', version: 2, refreshedAt: '2026-11-24T10:01:00.000Z' });
    await vault.store('con_1', { ...tokens, accessToken: 'reauthorized' });
    expect(await vault.read('con_1')).toMatchObject({ accessToken: 'reauthorized', version: 3, refreshedAt: null });
  });

  it('leases a refresh to one caller at a time, until the lease runs out or the tokens change', async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    const now = '2026-11-24T10:05:00.000Z';
    const results = await Promise.all([vault.lease('con_1', 1, now, 30_000), vault.lease('con_1', 1, now, 30_000)]);
    expect(results.sort()).toEqual([false, true]);
    expect(await vault.lease('con_1', 1, '2026-11-24T10:05:29.000Z', 30_000)).toBe(false);
    expect(await vault.lease('con_1', 1, '2026-11-24T10:05:31.000Z', 30_000)).toBe(true);
    await vault.refreshed('con_1', 1, tokens, now);
    expect(await vault.lease('con_1', 2, now, 30_000)).toBe(true);
    await vault.unlease('con_1', 2);
    expect(await vault.lease('con_1', 2, now, 30_000)).toBe(true);
  });

  it('gives a lease back only at the version it took it (a stale caller never clears a newer lease)', async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    const now = '2026-11-24T10:05:00.000Z';
    expect(await vault.lease('con_1', 1, now, 30_000)).toBe(true);
    // Another replica refreshed meanwhile (version 2) and leases the next refresh.
    expect(await vault.refreshed('con_1', 1, { ...tokens, accessToken: 'elsewhere' }, now)).toBe(true);
    expect(await vault.lease('con_1', 2, now, 30_000)).toBe(true);
    await vault.unlease('con_1', 1);
    expect(await vault.lease('con_1', 2, now, 30_000)).toBe(false);
  });

  it('gives up storing after ten rounds of another writer changing the tokens in between, saying so', async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    // A writer that moves the record on each time the vault has read it, so every conditional write misses.
    let reads_ = 0;
    const contended = new Proxy(reads, {
      get(store, property) {
        if (property !== 'collection') return Reflect.get(store, property, store);
        return (name: string, options?: object) => {
          const collection = store.collection<{ id: string; version: number }>(name, options);
          return new Proxy(collection, {
            get(target, method) {
              if (method !== 'get') return (Reflect.get(target, method, target) as (...args: unknown[]) => unknown).bind(target);
              return async (id: string) => {
                reads_++;
                const found = await target.get(id);
                if (found) await target.update(id, { version: found.version + 1 });
                return found;
              };
            },
          });
        };
      },
    });
    const busy = new TokenVault(contended as SqliteReadStore, settings(newKey));
    await expect(busy.store('con_1', { ...tokens, accessToken: 'never' })).rejects.toThrow('the tokens of con_1 kept changing while they were stored');
    expect(reads_).toBe(10);
    expect(await vault.read('con_1')).toMatchObject({ accessToken: tokens.accessToken });
  });

  it('destroys them', async () => {
    const vault = new TokenVault(reads, settings(newKey));
    await vault.store('con_1', tokens);
    await vault.destroy('con_1');
    expect(await raw().get('con_1')).toBeNull();
    await vault.destroy('con_1');
  });

  it('refuses to be built without a key', () => expect(() => new TokenVault(reads, settings(''))).toThrow(/CONNECTION_ENCRYPTION_KEY/));
});
