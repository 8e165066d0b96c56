import type { Mode } from '@campaign-ops/account-domain';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { Connection } from '@campaign-ops/connection-domain';
import { EventMetadata } from '@campaign-ops/event-sourcing';
import { ConnectionStore, ConnectionView } from './connection-store';
import { KeyedMutex } from '@campaign-ops/event-sourcing';
import { TokenVault } from './token-vault';

const SLOT_LEASE_MS = 15_000;
const SLOT_WAIT_MS = 20_000;
const SLOT_POLL_MS = 25;

export interface SlotClaim {
  connectionId: string;
  accountId: string;
  mode: Mode;
  channel: string;
  providerAccountId: string;
}

/**
 * At most one connection per account, mode and channel is `active` or `reauth_required` (docs/api.md
 * §4). A connection that becomes active takes the channel's slot: one to the same provider
 * account is replaced (revoked, its tokens destroyed), one to another provider account keeps it
 * and the newcomer is refused with 409 `connection_exists`.
 *
 * Activations on one channel of one account run one after another: in this process behind a keyed
 * lock, across replicas behind a lease on the channel's slot record (a compare-and-set in the read
 * store). The rule is read from the view, which every command brings up to date before it answers.
 */
@Injectable()
export class ChannelSlots {
  private readonly lock = new KeyedMutex();

  constructor(
    private readonly store: ConnectionStore,
    private readonly vault: TokenVault,
  ) {}

  /** Runs `activate` (which makes `claim.connectionId` active) if the slot allows it, then revokes what it replaces. */
  activate(claim: SlotClaim, metadata: EventMetadata, activate: () => Promise<Connection>): Promise<Outcome<Connection>> {
    const slot = `${claim.accountId}:${claim.mode}:${claim.channel}`;
    return this.lock.run(slot, () =>
      this.leased(slot, async () => {
        const held = await this.holders(claim);
        const refused = this.refusal(claim, held);
        if (refused) return refused;
        const connection = await activate();
        for (const replaced of held) await this.release(replaced.id, 'replaced', metadata);
        return success(connection);
      }),
    );
  }

  /** Answers early (before an OAuth round starts) what `activate` would answer at its end. */
  async check(claim: SlotClaim): Promise<Outcome<never> | null> {
    return this.refusal(claim, await this.holders(claim));
  }

  /** Revokes a connection and destroys its tokens (the projection destroys them again should this stop in between). */
  async release(connectionId: string, reason: 'deleted' | 'replaced', metadata: EventMetadata): Promise<Connection> {
    const connection = await this.store.execute(connectionId, { type: 'Revoke', reason, now: new Date().toISOString() }, metadata);
    await this.vault.destroy(connectionId);
    return connection;
  }

  /**
   * Runs `task` holding the slot's lease. The work under it is a few local writes; a lease left by
   * a replica that died runs out after SLOT_LEASE_MS.
   */
  private async leased<T>(slot: string, task: () => Promise<T>): Promise<T> {
    const holder = randomUUID();
    const deadline = Date.now() + SLOT_WAIT_MS;
    for (;;) {
      const now = new Date();
      const until = new Date(now.getTime() + SLOT_LEASE_MS).toISOString();
      const taken =
        (await this.store.channelSlots.insert({ id: slot, holder, lease_until: until })) ||
        (await this.store.channelSlots.update(slot, { holder, lease_until: until }, { lease_until: { $lte: now.toISOString() } })) !== null;
      if (taken) break;
      if (Date.now() > deadline) throw new Error(`the ${slot} channel slot stayed taken for ${SLOT_WAIT_MS} ms`);
      await new Promise((done) => setTimeout(done, SLOT_POLL_MS));
    }
    try {
      return await task();
    } finally {
      await this.store.channelSlots.update(slot, { lease_until: '' }, { holder });
    }
  }

  private async holders(claim: SlotClaim): Promise<ConnectionView[]> {
    const page = await this.store.views.find(
      { account_id: claim.accountId, mode: claim.mode, channel: claim.channel, status: { $in: ['active', 'reauth_required'] } },
      { limit: 100 },
    );
    return page.items.filter((view) => view.id !== claim.connectionId);
  }

  private refusal(claim: SlotClaim, held: ConnectionView[]): Outcome<never> | null {
    const other = held.find((view) => view.provider_account_id !== claim.providerAccountId);
    if (!other) return null;
    return failure(
      'connection_exists',
      `${claim.channel} already has connection ${other.id} (${other.status}) to provider account ${other.provider_account_id}; delete it before connecting another account.`,
      'provider_account_id',
    );
  }
}
