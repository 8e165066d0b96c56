import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';

/**
 * Idempotency keys (docs/api.md#dispatches-and-retries): for 24 hours the same key with the same request replays the first
 * answer byte for byte; another request with the key is 409 `idempotency_key_reused`; while the
 * first is in flight, 409 `idempotency_key_in_use`.
 *
 * Records live in the read store (collection `idempotency_keys`), not in process memory, so every
 * gateway replica sees the same ones. A key is reserved with insert-if-absent (exactly one request
 * wins; the others read the winner's record); an expired record, a released one or a reservation
 * whose lease ran out (its request crashed) is taken over with a compare-and-set on its `token`.
 */
export const IDEMPOTENCY_COLLECTION = 'idempotency_keys';
/** How long an answer is replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long an in-flight reservation holds the key before another request may take it over. */
export const DEFAULT_LEASE_MS = 60_000;

/** What a replay writes again: status, the exact body string, its content type, and its request id. */
export interface StoredAnswer {
  status: number;
  contentType: string;
  body: string;
  requestId: string;
}

export type IdempotencyRecord = {
  /** sha256 of scope and key: neither is stored in clear. */
  id: string;
  /** sha256 of method, path and raw body. */
  fingerprint: string;
  state: 'in_flight' | 'done';
  /** Who holds the record: every reservation and takeover writes a new one (the compare-and-set guard). */
  token: string;
  created_at: number;
  /** An in-flight reservation may be taken over after this (ms since epoch); 0 once done. */
  locked_until: number;
  /** The record no longer counts after this (ms since epoch); 0 when released. */
  expires_at: number;
  /**
   * The kept answer, sealed (AES-256-GCM) with a key derived from the scope and the
   * Idempotency-Key, which are not stored: answers can hold a new API key or signing secret, and
   * the store must not give them away to whoever reads it.
   */
  sealed_answer: string | null;
};

/** The request a key is bound to: method, path (with query) and the raw body bytes. */
export function requestFingerprint(method: string, path: string, rawBody: Buffer | undefined): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()}\n${path.length}:${path}\n`)
    .update(rawBody ?? Buffer.alloc(0))
    .digest('hex');
}

/**
 * The fingerprint as the store keeps it: keyed with the deployment's secret, since bodies hold
 * tokens (a token import) and an unkeyed digest of a guessed body could be checked against the
 * store. `k1:` tells it from the unkeyed digests kept before (for the 24 h such a record lives).
 */
export function keyedFingerprint(fingerprint: string, secret: string): string {
  return `k1:${createHmac('sha256', secret).update(`request-fingerprint\n${fingerprint}`).digest('hex')}`;
}

/** The record id of a key in a scope (`<account>:<mode>` for partners, `admin` for operators). */
export function idempotencyRecordId(scope: string, key: string, secret: string): string {
  // Length-prefixed so that no (scope, key) pair can collide with another.
  return createHmac('sha256', secret).update(`record-id\n${scope.length}:${scope}\n${key}`).digest('hex');
}

/** The key that seals a kept answer: another derivation than the record id, so the id does not reveal it. */
export function answerSealingKey(scope: string, key: string, secret: string): string {
  return createHmac('sha256', secret).update(`answer-sealing-key\n${scope.length}:${scope}\n${key}`).digest('hex');
}

/** Which answers are kept for replay: successes and business outcomes. Everything else releases the key. */
export function isReplayableStatus(status: number): boolean {
  return (status >= 200 && status < 300) || status === 402 || status === 409 || status === 422;
}

/**
 * Whether an answer is kept for replay: a replayable status, except the idempotency errors a
 * service itself answers (another request holds the key): those say "not yet", not an outcome.
 */
export function isReplayableAnswer(status: number, body: string): boolean {
  if (!isReplayableStatus(status)) return false;
  if (status !== 409) return true;
  try {
    const code = (JSON.parse(body) as { error?: { code?: string } }).error?.code;
    return code !== 'idempotency_key_in_use' && code !== 'idempotency_key_reused';
  } catch {
    return false;
  }
}

export interface Reservation {
  id: string;
  token: string;
  /** Seals the answer; derived from scope and key, never stored. */
  answerKey: string;
}

export type Begun = { kind: 'run'; reservation: Reservation } | { kind: 'replay'; answer: StoredAnswer } | { kind: 'reused' } | { kind: 'in_use' };

/** Where the gateway's idempotency settings are injected from (configuration). */
export const IDEMPOTENCY_OPTIONS = Symbol('IDEMPOTENCY_OPTIONS');

export interface IdempotencyOptions {
  /**
   * Keys the record ids and the answer seals (HMAC-SHA256), so that reading the store is not
   * enough to test guessed Idempotency-Keys offline. Replicas must share it.
   */
  secret?: string;
  ttlMs?: number;
  leaseMs?: number;
  /** Milliseconds since the epoch; records are shared between processes, so wall-clock time. */
  now?: () => number;
  /** Sweep of expired records; 0 turns it off. Default every 10 minutes. */
  sweepIntervalMs?: number;
}

@Injectable()
export class IdempotencyStore implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('idempotency');
  private readonly records: Collection<IdempotencyRecord>;
  private readonly ttlMs: number;
  private readonly secret: string;
  private readonly leaseMs: number;
  private readonly now: () => number;
  private readonly sweepIntervalMs: number;
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(@Inject(READ_STORE) reads: ReadStore, @Inject(IDEMPOTENCY_OPTIONS) options: IdempotencyOptions) {
    this.records = reads.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION, { indexes: ['expires_at'] });
    this.ttlMs = options.ttlMs ?? IDEMPOTENCY_TTL_MS;
    this.secret = options.secret ?? '';
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.now = options.now ?? Date.now;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10 * 60_000;
  }

  /**
   * Reserves the key for this request, or says what to answer instead: the stored answer, 409
   * reused (another request has the key) or 409 in use (the first is still running).
   */
  async begin(scope: string, key: string, fingerprint: string): Promise<Begun> {
    const id = idempotencyRecordId(scope, key, this.secret);
    const answerKey = answerSealingKey(scope, key, this.secret);
    const keyed = keyedFingerprint(fingerprint, this.secret);
    // A few rounds: between our failed insert and our read, the record may be released or deleted.
    for (let round = 0; round < 5; round++) {
      const now = this.now();
      const fresh = this.reservation(id, keyed, now);
      if (await this.records.insert(fresh)) return { kind: 'run', reservation: { id, token: fresh.token, answerKey } };
      const existing = await this.records.get(id);
      if (!existing) continue;
      const takeOver = async (): Promise<Begun | null> => {
        const { id: _id, ...patch } = fresh;
        const taken = await this.records.update(id, patch, { token: existing.token });
        return taken ? { kind: 'run', reservation: { id, token: fresh.token, answerKey } } : null;
      };
      if (existing.expires_at <= now) {
        const taken = await takeOver();
        if (taken) return taken;
        continue;
      }
      // A record kept before fingerprints were keyed holds the bare digest: it still answers its request for the 24 h it lives.
      if (existing.fingerprint !== keyed && existing.fingerprint !== fingerprint) return { kind: 'reused' };
      if (existing.state === 'done' && existing.sealed_answer) {
        return { kind: 'replay', answer: JSON.parse(SecretBox.fromHexKey(answerKey).open(existing.sealed_answer)) as StoredAnswer };
      }
      if (existing.locked_until <= now) {
        // The request that reserved it did not finish in its lease (it crashed): this one runs.
        const taken = await takeOver();
        if (taken) return taken;
        continue;
      }
      return { kind: 'in_use' };
    }
    return { kind: 'in_use' };
  }

  /** Keeps the answer for replay. False when the reservation was lost (taken over after its lease). */
  async complete(reservation: Reservation, answer: StoredAnswer): Promise<boolean> {
    const sealed = SecretBox.fromHexKey(reservation.answerKey).seal(JSON.stringify(answer));
    const done = await this.records.update(
      reservation.id,
      { state: 'done', locked_until: 0, sealed_answer: sealed },
      { token: reservation.token, state: 'in_flight' },
    );
    if (!done) this.logger.warn(JSON.stringify({ msg: 'idempotency reservation lost before its answer was kept', request_id: answer.requestId }));
    return done !== null;
  }

  /** Frees the key (a validation error, a 5xx): the client may fix the request and send it again with it. */
  async release(reservation: Reservation): Promise<void> {
    await this.records.update(reservation.id, { expires_at: 0, locked_until: 0 }, { token: reservation.token, state: 'in_flight' });
  }

  /** Deletes records that expired (or were released) over a lease ago; returns how many. */
  async sweep(limit = 500): Promise<number> {
    const cutoff = this.now() - this.leaseMs;
    const page = await this.records.find({ expires_at: { $lt: cutoff } }, { limit, order: 'asc' });
    let deleted = 0;
    for (const record of page.items) {
      // Read again right before deleting: a record taken over since the find is left alone.
      const current = await this.records.get(record.id);
      if (current && current.token === record.token && current.expires_at < cutoff && (await this.records.delete(record.id))) deleted++;
    }
    return deleted;
  }

  onApplicationBootstrap(): void {
    if (this.sweepIntervalMs <= 0) return;
    this.sweepTimer = setInterval(() => {
      this.sweep().catch((error: Error) => this.logger.warn(`sweeping expired idempotency keys failed: ${error.message}`));
    }, this.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  onModuleDestroy(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }

  private reservation(id: string, fingerprint: string, now: number): IdempotencyRecord {
    return {
      id,
      fingerprint,
      state: 'in_flight',
      token: randomUUID(),
      created_at: now,
      locked_until: now + this.leaseMs,
      expires_at: now + this.ttlMs,
      sealed_answer: null,
    };
  }
}

/**
 * The gateway's idempotency settings (configuration): the deployment's secret, and a lease that
 * outlasts a request waiting the longest bus timeout (a connection's, which calls the network: at
 * least BUS_REQUEST_TIMEOUT_MS), so a same-key retry never takes over a request still running.
 */
export const idempotencyOptionsProvider = {
  provide: IDEMPOTENCY_OPTIONS,
  useFactory: (config: ServiceConfig): IdempotencyOptions => ({
    secret: config.idempotencySecretKey,
    leaseMs: Math.max(DEFAULT_LEASE_MS, 2 * config.connectionRequestTimeoutMs),
  }),
  inject: [CONFIG],
};
