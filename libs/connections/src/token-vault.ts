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

/**
 * A vault record sealed with a key that is neither CONNECTION_ENCRYPTION_KEY nor
 * CONNECTION_ENCRYPTION_KEY_PREVIOUS: its tokens cannot be opened again by anyone holding only the
 * configured keys, so the connection needs its person again (reauthorization stores new tokens).
 */
export class UnreadableTokensError extends Error {
  constructor(
    readonly connectionId: string,
    readonly keyId: string,
  ) {
    super(`the tokens of ${connectionId} were sealed with key ${keyId}, which is neither CONNECTION_ENCRYPTION_KEY nor CONNECTION_ENCRYPTION_KEY_PREVIOUS`);
    this.name = 'UnreadableTokensError';
  }
}

/** How many vault records each key sealed, and which key that is to this vault. */
export interface KeyCount {
  keyId: string;
  key: 'current' | 'previous' | 'unknown';
  records: number;
}

export interface ResealReport {
  /** Sealed again with the current key. */
  resealed: number;
  /** Rewritten meanwhile (a refresh, a reauthorization): already under the current key. */
  changedMeanwhile: number;
  /** Under a key this vault does not hold: left as they are. */
  unreadable: number;
}

const RESEAL_PAGE = 100;

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
  private readonly previousKeyId: string | null;

  constructor(@Inject(READ_STORE) readStore: ReadStore, @Inject(CONNECTION_SETTINGS) settings: ConnectionSettings) {
    if (!settings.encryptionKey) throw new Error('the token vault needs CONNECTION_ENCRYPTION_KEY');
    // By key: the start-up check and `ops vault` count and walk the records each key sealed.
    this.records = readStore.collection<VaultRecord>('connection_tokens', { indexes: ['key_id'] });
    this.currentKeyId = keyIdOf(settings.encryptionKey);
    this.keys.set(this.currentKeyId, SecretBox.fromHexKey(settings.encryptionKey));
    this.previousKeyId = settings.previousEncryptionKey ? keyIdOf(settings.previousEncryptionKey) : null;
    if (settings.previousEncryptionKey) this.keys.set(this.previousKeyId!, SecretBox.fromHexKey(settings.previousEncryptionKey));
  }

  /** The records per key id, the current key first (listed even with no record), then the others by id. */
  async keyCounts(): Promise<KeyCount[]> {
    const ids = new Set([this.currentKeyId, ...(await this.records.distinct('key_id', {}, 1000)).map(String)]);
    const counts = await Promise.all([...ids].map(async (keyId) => ({ keyId, key: this.roleOf(keyId), records: await this.records.count({ key_id: keyId }) })));
    return counts.sort((a, b) => (a.keyId === this.currentKeyId ? -1 : b.keyId === this.currentKeyId ? 1 : a.keyId.localeCompare(b.keyId)));
  }

  /**
   * Seals every record under the previous key again with the current one, page by page (resumable:
   * a second run finds only what is left). The tokens and their version stay as they are, and a
   * record is rewritten only if still at the version and key it was read with, so a refresh or
   * reauthorization running meanwhile wins. Records under an unknown key are counted, not touched.
   */
  async reseal(onPage: (report: ResealReport) => void = () => undefined): Promise<ResealReport> {
    const report: ResealReport = { resealed: 0, changedMeanwhile: 0, unreadable: 0 };
    for (const keyId of (await this.keyCounts()).filter((count) => count.key !== 'current').map((count) => count.keyId)) {
      let startingAfter: string | undefined;
      for (;;) {
        const page = await this.records.find({ key_id: keyId }, { limit: RESEAL_PAGE, startingAfter, order: 'asc' });
        for (const record of page.items) {
          if (!this.keys.has(record.key_id)) {
            report.unreadable++;
            continue;
          }
          const opened = this.opened(record);
          const { sealed, key_id } = this.recordOf(
            record.id,
            { accessToken: opened.a, refreshToken: opened.r, expiresAt: record.expires_at },
            record.version,
            record.refreshed_at,
          );
          if (await this.records.update(record.id, { sealed, key_id }, { version: record.version, key_id: record.key_id })) report.resealed++;
          else report.changedMeanwhile++;
        }
        onPage({ ...report });
        if (!page.hasMore || page.items.length === 0) break;
        startingAfter = page.items[page.items.length - 1].id;
      }
    }
    return report;
  }

  async read(connectionId: string): Promise<VaultEntry | null> {
    const record = await this.records.get(connectionId);
    if (!record) return null;
    const opened = this.opened(record);
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

  /** The record's tokens, opened with the key that sealed them; they must be this record's connection's. */
  private opened(record: VaultRecord): SealedTokens {
    const box = this.keys.get(record.key_id);
    if (!box) throw new UnreadableTokensError(record.id, record.key_id);
    const opened = JSON.parse(box.open(record.sealed)) as SealedTokens;
    if (opened.c !== record.id) throw new Error(`the tokens on record for ${record.id} belong to another connection`);
    return opened;
  }

  private roleOf(keyId: string): KeyCount['key'] {
    return keyId === this.currentKeyId ? 'current' : keyId === this.previousKeyId ? 'previous' : 'unknown';
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
