import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';

/** docs/api.md: an Idempotency-Key holds for 24 h. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A reservation whose dispatch never appeared (its process died before charging) may be taken over after this. */
const ABANDONED_AFTER_MS = 60_000;

interface KeyRecord {
  id: string;
  dispatch_id: string;
  /** What was asked with the key: the same key with another campaign is not a retry. */
  fingerprint: string;
  created_at: string;
  [key: string]: unknown;
}

export type KeyClaim = { kind: 'claimed' } | { kind: 'taken'; dispatchId: string; claimedAt: number; sameRequest: boolean };

/**
 * Idempotency keys as dispatch-service sees them: one dispatch per (account, mode, key) for 24 h,
 * whatever the gateway did. The gateway replays answers it kept; this catches what it could not
 * keep, e.g. a retry after a 503 whose first request went on to create the dispatch.
 */
@Injectable()
export class DispatchIdempotency {
  private readonly records: Collection<KeyRecord>;

  constructor(@Inject(READ_STORE) readStore: ReadStore) {
    this.records = readStore.collection<KeyRecord>('dispatch_idempotency_keys', { indexes: ['created_at'] });
  }

  /** Reserves the key for `dispatchId`, or tells which dispatch holds it. */
  async claim(accountId: string, mode: string, key: string, dispatchId: string, request: unknown): Promise<KeyClaim> {
    const id = recordId(accountId, mode, key);
    const fingerprint = createHash('sha256').update(JSON.stringify(request)).digest('hex');
    const now = Date.now();
    if (await this.records.insert({ id, dispatch_id: dispatchId, fingerprint, created_at: new Date(now).toISOString() })) return { kind: 'claimed' };
    const existing = await this.records.get(id);
    if (!existing) return this.claim(accountId, mode, key, dispatchId, request);
    const claimedAt = Date.parse(existing.created_at);
    if (now - claimedAt < IDEMPOTENCY_WINDOW_MS)
      return { kind: 'taken', dispatchId: existing.dispatch_id, claimedAt, sameRequest: existing.fingerprint === fingerprint };
    // Expired: the key starts over, for whoever takes it first.
    const taken = await this.records.update(
      id,
      { dispatch_id: dispatchId, fingerprint, created_at: new Date(now).toISOString() },
      { dispatch_id: existing.dispatch_id },
    );
    return taken ? { kind: 'claimed' } : this.claim(accountId, mode, key, dispatchId, request);
  }

  /** Takes over a reservation whose dispatch never appeared, if it is old enough and still the same. */
  async takeOverAbandoned(
    accountId: string,
    mode: string,
    key: string,
    abandoned: { dispatchId: string; claimedAt: number; sameRequest: boolean },
    dispatchId: string,
  ): Promise<boolean> {
    if (!abandoned.sameRequest) return false;
    if (Date.now() - abandoned.claimedAt < ABANDONED_AFTER_MS) return false;
    const id = recordId(accountId, mode, key);
    return (await this.records.update(id, { dispatch_id: dispatchId, created_at: new Date().toISOString() }, { dispatch_id: abandoned.dispatchId })) !== null;
  }

  /** Forgets records whose 24 h are over (an expired one would be taken over anyway). */
  async sweep(): Promise<number> {
    const oldest = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
    let swept = 0;
    for (;;) {
      const page = await this.records.find({ created_at: { $lt: oldest } }, { limit: 500, order: 'asc' });
      for (const record of page.items) {
        // Read again: a record taken over since the find is young again and stays.
        const current = await this.records.get(record.id);
        if (current && current.created_at < oldest && (await this.records.delete(record.id))) swept++;
      }
      if (!page.hasMore) return swept;
    }
  }

  /**
   * Gives the key back when no dispatch was made (e.g. 402): the partner may try again with it.
   * The record is expired, only if it is still ours (compare-and-set), so a takeover is never undone.
   */
  async release(accountId: string, mode: string, key: string, dispatchId: string): Promise<void> {
    await this.records.update(recordId(accountId, mode, key), { created_at: new Date(0).toISOString() }, { dispatch_id: dispatchId });
  }
}

const recordId = (accountId: string, mode: string, key: string) => createHash('sha256').update(`${accountId.length}:${accountId}:${mode}:${key}`).digest('hex');
