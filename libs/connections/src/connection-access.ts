import { Inject, Injectable, Logger } from '@nestjs/common';
import { AD_NETWORKS, AdNetworks, TokenSet } from '@campaign-ops/ad-networks';
import { failure, Outcome, providerRefusal, success } from '@campaign-ops/api-errors';
import { Channel, ProviderError } from '@campaign-ops/channels';
import { Connection, ConnectionNotActive, ConnectionRevokedError } from '@campaign-ops/connection-domain';
import { EventMetadata } from '@campaign-ops/event-sourcing';
import { ConnectionAccess, ConnectionAccessRequest, ConnectionReauthRequiredRequest, ConnectionReauthRequiredResult } from '@campaign-ops/service-messages';
import { ConnectionStore } from './connection-store';
import { KeyedMutex } from '@campaign-ops/event-sourcing';
import { redacted } from './provider-calls';
import { TokenVault, UnreadableTokensError, VaultEntry } from './token-vault';

/** Tokens expiring within this are refreshed before they are handed out (docs/api.md#connections-and-oauth). */
export const REFRESH_AHEAD_MS = 10 * 60_000;
/** A refresh this recent is not repeated even when asked to: a concurrent caller just made it. */
const JUST_REFRESHED_MS = 30_000;
/** How long one caller holds the right to refresh a connection's tokens, and how long others wait for it. */
const REFRESH_LEASE_MS = 30_000;
const LEASE_POLL_MS = 200;

/**
 * The only way a token leaves connection-service: a fresh access token for dispatch-service's
 * live calls, refreshed first when it expires within 10 minutes (or when the network refused it:
 * `forceRefresh`). A refused refresh (the network's `auth`), or a token past its time with nothing
 * to refresh it with, moves the connection to `reauth_required`. The network refusing this
 * service's OAuth client (`validation`) is the operator's to fix: logged as an error, and the
 * connection is left as it is.
 *
 * One refresh per connection at a time: in this process a keyed lock; across replicas a lease on
 * the vault record (the others wait for its tokens), the vault's version (tokens replaced only
 * over those that were read) and the stream's expected revision (TokenRefreshed is appended over
 * the revision read, and decided again on a conflict).
 */
@Injectable()
export class ConnectionAccessService {
  private readonly logger = new Logger('connection-access');
  private readonly lock = new KeyedMutex();

  constructor(
    private readonly store: ConnectionStore,
    private readonly vault: TokenVault,
    @Inject(AD_NETWORKS) private readonly networks: AdNetworks,
  ) {}

  async access(request: ConnectionAccessRequest): Promise<Outcome<ConnectionAccess>> {
    const found = await this.owned(request.accountId, request.mode, request.connectionId);
    if (!found) return failure('connection_required', `No such connection: ${request.connectionId}`, 'connection_id');
    const metadata: EventMetadata = { accountId: request.accountId, mode: request.mode, requestId: request.requestId ?? null };
    if (request.currency !== undefined && found.status === 'active' && request.currency !== found.currency)
      return providerRefusal(
        `The budget is in ${request.currency} but the ${found.channel} ad account ${found.providerAccountId} bills in ${found.currency}.`,
        'currency_mismatch',
      );
    return this.lock.run(found.id, () => this.fresh(found.id, request.forceRefresh === true, metadata, request.refusedVersion));
  }

  /**
   * A provider refused a token dispatch-service was given (or `[sandbox:reauth]`): the connection
   * (with `connectionId` null: the channel's connection of the account and mode, if any)
   * moves to `reauth_required`, once however often it is said.
   */
  async reauthRequired(request: ConnectionReauthRequiredRequest): Promise<Outcome<ConnectionReauthRequiredResult>> {
    let target: Connection | null;
    if (request.connectionId) {
      target = await this.owned(request.accountId, request.mode, request.connectionId);
    } else {
      // The channel's connection: the one active, or the one already waiting for reauthorization (at most one is either).
      const [view] = (
        await this.store.views.find(
          { account_id: request.accountId, mode: request.mode, channel: request.channel, status: { $in: ['active', 'reauth_required'] } },
          { limit: 1 },
        )
      ).items;
      target = view ? await this.store.load(view.id) : null;
    }
    if (!target) return success({ connection: null });
    // A refusal of tokens older than those on file (reauthorized since) says nothing of these.
    if (
      request.refusedVersion !== undefined &&
      ((await this.vault.read(target.id).catch(unlessUnreadable))?.version ?? request.refusedVersion) !== request.refusedVersion
    )
      return success({ connection: { id: target.id, status: target.status } });
    const metadata: EventMetadata = { accountId: request.accountId, mode: request.mode, requestId: request.requestId ?? null };
    const after = await this.requireReauth(target, request.reason, metadata);
    return success({ connection: { id: after.id, status: after.status } });
  }

  /** The periodic sweep: refreshes active live connections that expire within 10 minutes. */
  async refreshExpiring(): Promise<{ checked: number; failed: number }> {
    const horizon = new Date(Date.now() + REFRESH_AHEAD_MS).toISOString();
    let checked = 0;
    let failed = 0;
    let startingAfter: string | undefined;
    for (;;) {
      const page = await this.store.views.find({ mode: 'live', status: 'active', expires_at: { $lte: horizon } }, { limit: 100, startingAfter, order: 'asc' });
      for (const view of page.items) {
        checked++;
        try {
          const outcome = await this.access({ accountId: view.account_id, mode: 'live', connectionId: view.id });
          if (!outcome.ok) failed++;
        } catch (error) {
          failed++;
          this.logger.warn(`refreshing ${view.id} failed: ${(error as Error).message}`);
        }
      }
      if (!page.hasMore || page.items.length === 0) return { checked, failed };
      startingAfter = page.items[page.items.length - 1].id;
    }
  }

  private async fresh(id: string, force: boolean, metadata: EventMetadata, refusedVersion?: number): Promise<Outcome<ConnectionAccess>> {
    const connection = await this.store.load(id);
    const refused = unusable(connection, id);
    if (refused) return refused;
    const current = connection as Connection;
    let entry: VaultEntry | null;
    try {
      entry = await this.vault.read(id);
    } catch (error) {
      if (!(error instanceof UnreadableTokensError)) throw error;
      // The key is gone: no retry can open them, only the person's new consent replaces them.
      this.logger.error(`${error.message}: ${id} moves to reauth_required (docs/operations.md: Rotating the token key)`);
      return this.refuse(current, 'tokens_unreadable', metadata);
    }
    if (!entry) return this.refuse(current, 'token_missing', metadata);
    const now = Date.now();
    // The refused token was replaced meanwhile (a reauthorization, a refresh elsewhere): the new one is the answer.
    if (force && refusedVersion !== undefined && entry.version !== refusedVersion) return success(accessOf(current, entry));
    const needed = force
      ? !(entry.refreshedAt && now - Date.parse(entry.refreshedAt) < JUST_REFRESHED_MS)
      : expiresWithin(entry.expiresAt, now, REFRESH_AHEAD_MS);
    if (!needed) return success(accessOf(current, entry));
    if (!entry.refreshToken) {
      // Nothing to refresh with: a token still good for a few minutes is used; a dead one needs the person.
      if (force) return this.refuse(current, 'token_refused', metadata);
      if (expiresWithin(entry.expiresAt, now, 0)) return this.refuse(current, 'token_expired', metadata);
      return success(accessOf(current, entry));
    }
    return this.refresh(current, entry, metadata);
  }

  private async refresh(connection: Connection, entry: VaultEntry, metadata: EventMetadata): Promise<Outcome<ConnectionAccess>> {
    const channel = connection.channel as Channel;
    const network = this.networks[channel];
    if (!network) return failure('provider_unavailable', `${channel} cannot be called from here (no live adapter is configured).`);
    if (!(await this.vault.lease(connection.id, entry.version, new Date().toISOString(), REFRESH_LEASE_MS)))
      return this.awaitRefreshElsewhere(connection, entry.version);

    let tokens: TokenSet;
    try {
      tokens = await network.refresh(entry.refreshToken!);
    } catch (error) {
      await this.vault.unlease(connection.id, entry.version);
      // Only the network refusing the grant needs the person again.
      if (error instanceof ProviderError && error.kind === 'auth') return this.refuse(connection, 'refresh_refused', metadata);
      if (error instanceof ProviderError && error.kind === 'validation') {
        // The operator's fault (the OAuth client refused or missing): every connection of the channel would fail alike, so none is moved.
        this.logger.error(
          `${channel} refused this service's OAuth client refreshing ${connection.id} (${error.providerCode ?? 'no code'}): check CHANNEL_${channel.toUpperCase()}_CLIENT_ID and _CLIENT_SECRET; the connection is left as it is`,
        );
        return failure('provider_unavailable', `${channel} could not refresh the token on our side; try again later.`);
      }
      this.logger.warn(
        `refreshing ${connection.id} failed: ${error instanceof ProviderError ? `${error.kind} ${error.providerCode ?? ''}`.trim() : redacted(error, [entry.refreshToken, entry.accessToken])}`,
      );
      return failure('provider_unavailable', `${channel} did not answer the token refresh; try again shortly.`);
    }

    const next = { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken ?? entry.refreshToken, expiresAt: tokens.expiresAt };
    const now = new Date().toISOString();
    if (!(await this.vault.refreshed(connection.id, entry.version, next, now))) {
      // Reauthorized meanwhile: those tokens are newer than ours.
      return this.fresh(connection.id, false, metadata);
    }
    try {
      const after = await this.store.execute(connection.id, { type: 'RefreshToken', expiresAt: next.expiresAt, now }, metadata);
      return success(accessOf(after, { ...next, version: entry.version + 1 }));
    } catch (error) {
      if (error instanceof ConnectionRevokedError) await this.vault.destroy(connection.id);
      if (error instanceof ConnectionNotActive || error instanceof ConnectionRevokedError)
        return unusable(await this.store.load(connection.id), connection.id)!;
      throw error;
    }
  }

  /** Another replica holds the lease: its tokens, once it has them; or what became of the connection. */
  private async awaitRefreshElsewhere(connection: Connection, version: number): Promise<Outcome<ConnectionAccess>> {
    const deadline = Date.now() + REFRESH_LEASE_MS;
    while (Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, LEASE_POLL_MS));
      const entry = await this.vault.read(connection.id);
      if (!entry) break;
      if (entry.version !== version) return success(accessOf(connection, entry));
    }
    const now = await this.store.load(connection.id);
    return unusable(now, connection.id) ?? failure('provider_unavailable', `The ${connection.channel} token is being refreshed; try again shortly.`);
  }

  /** The connection needs the person again: moved to `reauth_required` (once), and said so to the caller. */
  private async refuse(connection: Connection, reason: string, metadata: EventMetadata): Promise<Outcome<never>> {
    await this.requireReauth(connection, reason, metadata);
    return failure(
      'connection_reauth_required',
      `The ${connection.channel} connection ${connection.id} needs to be authorized again (${reason}).`,
      'connection_id',
    );
  }

  private async requireReauth(connection: Connection, reason: string, metadata: EventMetadata): Promise<Connection> {
    try {
      return await this.store.execute(connection.id, { type: 'RequireReauth', reason, now: new Date().toISOString() }, metadata);
    } catch (error) {
      // A pending connection was never authorized: nothing to move.
      if (error instanceof ConnectionNotActive) return connection;
      throw error;
    }
  }

  private async owned(accountId: string, mode: string, id: string): Promise<Connection | null> {
    if (!/^con_[0-9A-Za-z]+$/.test(id)) return null;
    const connection = await this.store.load(id);
    return connection && connection.accountId === accountId && connection.mode === mode ? connection : null;
  }
}

const expiresWithin = (expiresAt: string | null, now: number, ms: number) => expiresAt !== null && Date.parse(expiresAt) - now <= ms;

/** Why a connection cannot give a token, or null when it can (live and active). */
function unusable(connection: Connection | null, id: string): Outcome<never> | null {
  if (!connection || connection.status === 'revoked' || connection.status === 'pending')
    return failure('connection_required', `Connection ${id} is ${connection?.status ?? 'missing'}; connect the channel first.`, 'connection_id');
  if (connection.status === 'reauth_required')
    return failure(
      'connection_reauth_required',
      `The ${connection.channel} connection ${id} needs to be authorized again (${connection.reauthReason}).`,
      'connection_id',
    );
  if (connection.mode !== 'live')
    return failure('connection_required', `Connection ${id} is a sandbox connection; it holds no provider token.`, 'connection_id');
  return null;
}

const accessOf = (connection: Connection, tokens: { accessToken: string; version: number }): ConnectionAccess => ({
  connectionId: connection.id,
  channel: connection.channel as Channel,
  providerAccountId: connection.providerAccountId,
  accessToken: tokens.accessToken,
  tokenVersion: tokens.version,
  currency: connection.currency ?? '',
  timezone: connection.timezone ?? '',
});

/** A vault read's failure, rethrown unless the tokens are under a key that is gone (then: none to compare). */
const unlessUnreadable = (error: unknown): null => {
  if (error instanceof UnreadableTokensError) return null;
  throw error;
};
