// Checkpoints and processor leases of the MongoDB read store: one document per processor in the
// `checkpoints` collection, holding both, so a fenced write is a single atomic update.
import type { Collection as DriverCollection } from 'mongodb';
import type { CheckpointStore, Lease, LeaseFence } from './read-store.port';
import { LeaseLostError } from './read-store.port';
import { isDuplicateKey } from './mongo-collection';

/** A processor's checkpoint and its lease, in one document: so a fenced write is one atomic single-document update. */
export type CheckpointRow = { _id: string; position?: string; lease?: { holder: string; epoch: number; expiresAt: Date } };

export class MongoCheckpointStore implements CheckpointStore {
  constructor(
    private readonly rows: DriverCollection<CheckpointRow>,
    private readonly assertOpen: () => void,
  ) {}

  async get(name: string): Promise<string | undefined> {
    this.assertOpen();
    const row = await this.rows.findOne({ _id: name });
    return row?.position ?? undefined;
  }

  async set(name: string, position: string, fence?: LeaseFence): Promise<void> {
    this.assertOpen();
    if (fence) {
      // The lease is in the same document: the check and the write are one atomic update.
      const { matchedCount } = await this.rows.updateOne(heldBy(name, fence), { $set: { position } });
      if (matchedCount === 0) throw new LeaseLostError(name, fence);
      return;
    }
    // An upsert on `_id` equality alone: the server itself retries the insert race of two
    // concurrent first writes (its duplicate-key retry for exact `_id` matches).
    await this.rows.updateOne({ _id: name }, { $set: { position } }, { upsert: true });
  }

  /** Expiry is by the server's clock ($$NOW), so the replicas' clocks need not agree. */
  async acquireLease(name: string, holder: string, ttlMs: number, options: { evenIfHeld?: boolean } = {}): Promise<Lease | null> {
    this.assertOpen();
    const takeable = options.evenIfHeld
      ? { _id: name }
      : { _id: name, $expr: { $or: [{ $lte: [{ $ifNull: ['$lease.expiresAt', new Date(0)] }, '$$NOW'] }, { $eq: ['$lease.holder', { $literal: holder }] }] } };
    const take = [
      { $set: { lease: { holder: { $literal: holder }, epoch: { $add: [{ $ifNull: ['$lease.epoch', 0] }, 1] }, expiresAt: { $add: ['$$NOW', ttlMs] } } } },
    ];
    for (let attempt = 0; ; attempt++) {
      const row = await this.rows.findOneAndUpdate(takeable, take, { returnDocument: 'after' });
      if (row?.lease) return { holder: row.lease.holder, epoch: row.lease.epoch, expiresAt: row.lease.expiresAt };
      if (attempt > 0 || (await this.rows.countDocuments({ _id: name }, { limit: 1 })) > 0) return null;
      // No document yet: create it (a concurrent taker may win that race: fine), then take it.
      await this.rows.insertOne({ _id: name }).catch((error: unknown) => {
        if (!isDuplicateKey(error)) throw error;
      });
    }
  }

  async renewLease(name: string, fence: LeaseFence, ttlMs: number): Promise<boolean> {
    this.assertOpen();
    const { matchedCount } = await this.rows.updateOne(heldBy(name, fence), [{ $set: { 'lease.expiresAt': { $add: ['$$NOW', ttlMs] } } }]);
    return matchedCount === 1;
  }

  async releaseLease(name: string, fence: LeaseFence): Promise<void> {
    this.assertOpen();
    await this.rows.updateOne(heldBy(name, fence), { $set: { 'lease.expiresAt': new Date(0) } });
  }

  async lease(name: string): Promise<Lease | null> {
    this.assertOpen();
    const lease = (await this.rows.findOne({ _id: name }))?.lease;
    return lease ? { holder: lease.holder, epoch: lease.epoch, expiresAt: lease.expiresAt } : null;
  }

  async reset(name: string, position: string | undefined): Promise<void> {
    this.assertOpen();
    const revoke = { 'lease.holder': '', 'lease.expiresAt': new Date(0) };
    await this.rows.updateOne(
      { _id: name },
      position === undefined
        ? { $set: revoke, $inc: { 'lease.epoch': 1 }, $unset: { position: '' } }
        : { $set: { ...revoke, position }, $inc: { 'lease.epoch': 1 } },
      { upsert: true },
    );
  }
}

const heldBy = (name: string, fence: LeaseFence) => ({ _id: name, 'lease.holder': fence.holder, 'lease.epoch': fence.epoch });
