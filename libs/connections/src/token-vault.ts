import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { CONNECTION_SETTINGS, ConnectionSettings } from './connection-settings';

/** A connection's provider tokens, as they are used (never in an event, a view, an answer or a log). */
export interface ConnectionTokens {
  accessToken: string;
  refreshToken: string | null;
  expiresAt: string | null;
}

export interface VaultEntry extends ConnectionTokens {
  /** Bumped by every write: a refresh replaces only the tokens it read. */
  version: number;
  /** When a refresh last replaced them; null for tokens as they were given (import, OAuth, reauthorization). */
  refreshedAt: string | null;
}

/** The vault's record: the tokens sealed, the id of the key that sealed them, and what refreshing needs in the clear. */
interface VaultRecord {
  id: string;
  key_id: string;
  sealed: string;
  expires_at: string | null;
  version: number;
  refreshed_at: string | null;
  /** A refresh in progress somewhere holds the tokens until then ('' when none does). */
  lease_until: string;
  [field: string]: unknown;
}

interface SealedTokens {
  c: string;
  a: string;
  r: string | null;
}

const keyIdOf = (hexKey: string) => createHash('sha256').update(Buffer.from(hexKey, 'hex')).digest('hex').slice(0, 8);

/**
 * Provider tokens at rest: AES-256-GCM with CONNECTION_ENCRYPTION_KEY, in a collection of their
 * own (`connection_tokens`), one record per connection, destroyed when it is revoked. Each record
 * names its key (first 8 hex of the key's SHA-256), so a key can be rotated: with the old one as
 * CONNECTION_ENCRYPTION_KEY_PREVIOUS, old values are opened and sealed with the new key on their
 * next write. The connection id is sealed with the tokens, so a record copied onto another
 * connection is refused.
 */
@Injectable()
export class TokenVault {
  private readonly records: Collection<VaultRecord>;
  private readonly keys = new Map<string, SecretBox>();
  private readonly currentKeyId: string;

  constructor(@Inject(READ_STORE) readStore: ReadStore, @Inject(CONNECTION_SETTINGS) settings: ConnectionSettings) {
    if (!settings.encryptionKey) throw new Error('the token vault needs CONNECTION_ENCRYPTION_KEY');
    this.records = readStore.collection<VaultRecord>('connection_tokens');
    this.currentKeyId = keyIdOf(settings.encryptionKey);
    this.keys.set(this.currentKeyId, SecretBox.fromHexKey(settings.encryptionKey));
    if (settings.previousEncryptionKey) this.keys.set(keyIdOf(settings.previousEncryptionKey), SecretBox.fromHexKey(settings.previousEncryptionKey));
  }

  async read(connectionId: string): Promise<VaultEntry | null> {
    const record = await this.records.get(connectionId);
    if (!record) return null;
    const box = this.keys.get(record.key_id);
    if (!box) throw new Error(`the tokens of ${connectionId} were sealed with key ${record.key_id}, which is neither CONNECTION_ENCRYPTION_KEY nor CONNECTION_ENCRYPTION_KEY_PREVIOUS`);
    const opened = JSON.parse(box.open(record.sealed)) as SealedTokens;
    if (opened.c !== connectionId) throw new Error(`the tokens on record for ${connectionId} belong to another connection`);
    return { accessToken: opened.a, refreshToken: opened.r, expiresAt: record.expires_at, version: record.version, refreshedAt: record.refreshed_at };
  }

  /** New tokens for a connection (import, OAuth, reauthorization), whatever was there. */
  async store(connectionId: string, tokens: ConnectionTokens): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const existing = await this.records.get(connectionId);
      if (!existing) {
        if (await this.records.insert(this.recordOf(connectionId, tokens, 1, null))) return;
      } else if (await this.write(connectionId, existing.version, tokens, null)) return;
    }
    throw new Error(`the tokens of ${connectionId} kept changing while they were stored`);
  }

  /** Refreshed tokens, kept only if the tokens are still at `version` (false: another writer came first). */
  refreshed(connectionId: string, version: number, tokens: ConnectionTokens, now: string): Promise<boolean> {
    return this.write(connectionId, version, tokens, now);
  }

  /**
   * Takes the right to refresh these tokens (at `version`) for `ttlMs`: of several replicas that
   * find them expiring at once, one refreshes, the others wait for its tokens.
   */
  async lease(connectionId: string, version: number, now: string, ttlMs: number): Promise<boolean> {
    const until = new Date(Date.parse(now) + ttlMs).toISOString();
    return (await this.records.update(connectionId, { lease_until: until }, { version, lease_until: { $lte: now } })) !== null;
  }

  /** Gives a lease back (a refresh that failed), so the next caller need not wait for it to run out. */
  async unlease(connectionId: string, version: number): Promise<void> {
    await this.records.update(connectionId, { lease_until: '' }, { version });
  }

  async destroy(connectionId: string): Promise<void> {
    await this.records.delete(connectionId);
  }

  private async write(connectionId: string, version: number, tokens: ConnectionTokens, refreshedAt: string | null): Promise<boolean> {
    const { id: _id, ...patch } = this.recordOf(connectionId, tokens, version + 1, refreshedAt);
    return (await this.records.update(connectionId, patch, { version })) !== null;
  }

  private recordOf(connectionId: string, tokens: ConnectionTokens, version: number, refreshedAt: string | null): VaultRecord {
    const sealed: SealedTokens = { c: connectionId, a: tokens.accessToken, r: tokens.refreshToken };
    return {
      id: connectionId,
      key_id: this.currentKeyId,
      sealed: this.keys.get(this.currentKeyId)!.seal(JSON.stringify(sealed)),
      expires_at: tokens.expiresAt,
      version,
      refreshed_at: refreshedAt,
      lease_until: '',
    };
  }
}
