// Checkpoints and processor leases of the SQLite read store (tables `checkpoints` and `leases`).
import { GroupCommit } from '@campaign-ops/sqlite-wal';
import type { CheckpointStore, Lease, LeaseFence } from './read-store.port';
import { LeaseLostError } from './read-store.port';
import { StatementSource } from './sqlite-collection';

export class SqliteCheckpointStore implements CheckpointStore {
  constructor(
    private readonly statement: StatementSource,
    private readonly writes: GroupCommit,
  ) {}

  async get(name: string): Promise<string | undefined> {
    const row = this.statement('SELECT position FROM checkpoints WHERE name = ?').get(name) as { position: string } | undefined;
    return row?.position;
  }

  async set(name: string, position: string, fence?: LeaseFence): Promise<void> {
    if (!fence) {
      await this.writes.write(() =>
        this.statement('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position').run(
          name,
          position,
        ),
      );
      return;
    }
    // One statement: the lease check and the write are one atomic step.
    const { changes } = await this.writes.write(() =>
      this.statement(
        'INSERT INTO checkpoints (name, position) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM leases WHERE name = ? AND holder = ? AND epoch = ?) ' +
          'ON CONFLICT(name) DO UPDATE SET position = excluded.position',
      ).run(name, position, name, fence.holder, fence.epoch),
    );
    if (changes === 0) throw new LeaseLostError(name, fence);
  }

  async acquireLease(name: string, holder: string, ttlMs: number, options: { evenIfHeld?: boolean } = {}): Promise<Lease | null> {
    const row = await this.writes.write(() => {
      const now = Date.now();
      return this.statement(
        'INSERT INTO leases (name, holder, epoch, expires_at) VALUES (?, ?, 1, ?) ' +
          'ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, epoch = leases.epoch + 1, expires_at = excluded.expires_at ' +
          'WHERE ? OR leases.expires_at <= ? OR leases.holder = excluded.holder RETURNING holder, epoch, expires_at',
      ).get(name, holder, now + ttlMs, options.evenIfHeld ? 1 : 0, now) as LeaseRow | undefined;
    });
    return row ? toLease(row) : null;
  }

  async renewLease(name: string, fence: LeaseFence, ttlMs: number): Promise<boolean> {
    const { changes } = await this.writes.write(() =>
      this.statement('UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND epoch = ?').run(Date.now() + ttlMs, name, fence.holder, fence.epoch),
    );
    return changes === 1;
  }

  async releaseLease(name: string, fence: LeaseFence): Promise<void> {
    await this.writes.write(() =>
      this.statement('UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ? AND epoch = ?').run(name, fence.holder, fence.epoch),
    );
  }

  async lease(name: string): Promise<Lease | null> {
    const row = this.statement('SELECT holder, epoch, expires_at FROM leases WHERE name = ?').get(name) as LeaseRow | undefined;
    return row ? toLease(row) : null;
  }

  async reset(name: string, position: string | undefined): Promise<void> {
    await this.writes.write(() => {
      this.statement(
        "INSERT INTO leases (name, holder, epoch, expires_at) VALUES (?, '', 1, 0) ON CONFLICT(name) DO UPDATE SET holder = '', epoch = leases.epoch + 1, expires_at = 0",
      ).run(name);
      if (position === undefined) this.statement('DELETE FROM checkpoints WHERE name = ?').run(name);
      else
        this.statement('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position').run(
          name,
          position,
        );
    });
  }
}

type LeaseRow = { holder: string; epoch: number; expires_at: number };
const toLease = (row: LeaseRow): Lease => ({ holder: row.holder, epoch: row.epoch, expiresAt: new Date(row.expires_at) });
