import { Inject, Injectable, Logger } from '@nestjs/common';
import { AD_NETWORKS, AdNetworks, ProviderAccount } from '@campaign-ops/ad-networks';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { Channel } from '@campaign-ops/channels';
import { Connection, ConnectionResource, ConnectionRevokedError, toConnectionResource } from '@campaign-ops/connection-domain';
import { newId } from '@campaign-ops/ids';
import {
  Caller,
  ConnectionByIdRequest,
  ConnectionCredentials,
  CreateConnectionRequest,
  Mode,
  ReauthorizeConnectionRequest,
} from '@campaign-ops/service-messages';
import { ChannelSlots, SlotClaim } from './channel-slots';
import { ConnectionStore } from './connection-store';
import { OAuthRounds } from './oauth-rounds';
import { REFRESH_AHEAD_MS } from './connection-access';
import { freshForCheck, liveNetwork, readAccount, redacted } from './provider-calls';
import { ConnectionTokens, TokenVault } from './token-vault';

/** A connection as a command answers it: with `authorization_url` when the command started an OAuth round. */
export type ConnectionAnswer = ConnectionResource & { authorization_url?: string };

/** How long a delete waits for the network to revoke the grant; the delete answers either way. */
export const REVOKE_TIMEOUT_MS = 5_000;

const SANDBOX_ACCOUNT: ProviderAccount = { currency: 'USD', timezone: 'UTC' };

/** What new credentials come to once checked: the ad account they reach, and the tokens to keep (none in the sandbox). */
interface Verified {
  account: ProviderAccount;
  tokens: ConnectionTokens | null;
  expiresAt: string | null;
}

/**
 * The write side of connections (docs/api.md#connections-and-oauth): create (token import or an OAuth round), reauthorize
 * and delete. Every command is scoped to the caller's account and mode: another's connection
 * answers exactly as one that does not exist.
 */
@Injectable()
export class ConnectionCommands {
  private readonly logger = new Logger('connection-commands');

  constructor(
    private readonly store: ConnectionStore,
    private readonly vault: TokenVault,
    private readonly slots: ChannelSlots,
    private readonly rounds: OAuthRounds,
    @Inject(AD_NETWORKS) private readonly networks: AdNetworks,
  ) {}

  async create(request: CreateConnectionRequest): Promise<Outcome<ConnectionAnswer>> {
    const { caller, channel, providerAccountId, credentials, redirectUri, sandbox } = request;
    const refused = shapeRefusal(caller.mode, credentials, redirectUri);
    if (refused) return refused;
    if (sandbox && caller.mode === 'live')
      return failure('parameter_invalid', 'sandbox is only for test keys: a live connection takes its currency and time zone from the ad account.', 'sandbox');
    const claim: SlotClaim = { connectionId: newId('con'), accountId: caller.accountId, mode: caller.mode, channel, providerAccountId };
    const metadata = metadataOf(caller);
    const sandboxAccount = { ...SANDBOX_ACCOUNT, ...sandbox };

    if (redirectUri !== undefined) {
      const registered = request.oauthRedirectUris ?? [];
      const prepared = this.rounds.prepare(caller.mode, channel, redirectUri, registered);
      if (!prepared.ok) return prepared;
      const taken = await this.slots.check(claim);
      if (taken) return taken;
      return this.rounds.start({ ...claim, channel, redirectUri, registeredRedirectUris: registered, sandbox: sandboxAccount }, false, metadata);
    }

    const taken = await this.slots.check(claim);
    if (taken) return taken;
    const verified = await this.verify(caller.mode, channel, providerAccountId, credentials, sandboxAccount);
    if (!verified.ok) return verified;
    const { account, tokens, expiresAt } = verified.value;
    const activated = await this.slots.activate(claim, metadata, async () => {
      const now = new Date().toISOString();
      if (tokens) await this.vault.store(claim.connectionId, tokens);
      return this.store.execute(
        claim.connectionId,
        { type: 'ImportToken', ...claim, scopes: [], account, expiresAt, sandbox: caller.mode === 'test', now },
        metadata,
      );
    });
    return activated.ok ? success(toConnectionResource(activated.value)) : activated;
  }

  /** New credentials, or a new OAuth round, for a connection that exists (pending, active or reauth_required). */
  async reauthorize(request: ReauthorizeConnectionRequest): Promise<Outcome<ConnectionAnswer>> {
    const { caller, id, credentials, redirectUri } = request;
    const connection = await this.owned(caller, id);
    if (!connection) return missing(id);
    const refused = shapeRefusal(caller.mode, credentials, redirectUri);
    if (refused) return refused;
    if (connection.status === 'revoked') return revoked(id);
    const metadata = metadataOf(caller);
    const claim: SlotClaim = {
      connectionId: id,
      accountId: connection.accountId,
      mode: connection.mode,
      channel: connection.channel,
      providerAccountId: connection.providerAccountId,
    };
    const sandboxAccount = { currency: connection.currency ?? SANDBOX_ACCOUNT.currency, timezone: connection.timezone ?? SANDBOX_ACCOUNT.timezone };

    try {
      if (redirectUri !== undefined)
        return await this.rounds.start(
          { ...claim, channel: connection.channel as Channel, redirectUri, registeredRedirectUris: request.oauthRedirectUris ?? [], sandbox: sandboxAccount },
          true,
          metadata,
        );
      const verified = await this.verify(caller.mode, connection.channel as Channel, connection.providerAccountId, credentials, sandboxAccount);
      if (!verified.ok) return verified;
      const { account, tokens, expiresAt } = verified.value;
      const activated = await this.slots.activate(claim, metadata, async () => {
        const now = new Date().toISOString();
        if (tokens) await this.vault.store(id, tokens);
        try {
          return await this.store.execute(
            id,
            { type: 'Reauthorize', scopes: connection.scopes, account, expiresAt, sandbox: caller.mode === 'test', now },
            metadata,
          );
        } catch (error) {
          // Deleted meanwhile: its tokens go with it.
          if (error instanceof ConnectionRevokedError) await this.vault.destroy(id);
          throw error;
        }
      });
      return activated.ok ? success(toConnectionResource(activated.value)) : activated;
    } catch (error) {
      if (error instanceof ConnectionRevokedError) return revoked(id);
      throw error;
    }
  }

  /**
   * `revoked`, its tokens destroyed; deleting it again answers the same. A live connection's grant is
   * first revoked at the network, where the network documents a way (CHANNELS.md), while its tokens
   * are still here: a delete cut short in between leaves a connection whose DELETE can be sent again,
   * never a grant alive at the network whose tokens we no longer hold. A network that refuses or does
   * not answer within REVOKE_TIMEOUT_MS is logged, never a failure: the tokens are destroyed anyway.
   */
  async remove({ caller, id }: ConnectionByIdRequest): Promise<Outcome<ConnectionResource>> {
    const connection = await this.owned(caller, id);
    if (!connection) return missing(id);
    if (caller.mode === 'live' && connection.status !== 'revoked') await this.revokeAtNetwork(connection.channel as Channel, id);
    return success(toConnectionResource(await this.slots.release(id, 'deleted', metadataOf(caller))));
  }

  /** Test connections hold no tokens and never reach a network; neither does a network without a documented revocation. */
  private async revokeAtNetwork(channel: Channel, id: string): Promise<void> {
    const network = this.networks[channel];
    if (!network?.revokeTokens) return;
    const tokens = await this.vault.read(id).catch(() => null);
    if (!tokens) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>(
      (_resolve, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${REVOKE_TIMEOUT_MS} ms`)), REVOKE_TIMEOUT_MS)),
    );
    try {
      await Promise.race([network.revokeTokens({ accessToken: tokens.accessToken, refreshToken: tokens.refreshToken }), timeout]);
      this.logger.log(`${id}: the grant was revoked at ${channel}`);
    } catch (error) {
      this.logger.warn(
        `${id}: ${channel} did not revoke the grant (${redacted(error, [tokens.accessToken, tokens.refreshToken])}); the tokens are destroyed here all the same`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** The connection if it is the caller's (account and mode), from its stream. */
  private async owned(caller: Caller, id: string): Promise<Connection | null> {
    if (!/^con_[0-9A-Za-z]+$/.test(id)) return null;
    const connection = await this.store.load(id);
    return connection && connection.accountId === caller.accountId && connection.mode === caller.mode ? connection : null;
  }

  /** Live: the ad account read with the token (docs/api.md#connections-and-oauth). Test keys: the sandbox account, nothing kept. */
  private async verify(
    mode: Mode,
    channel: Channel,
    providerAccountId: string,
    credentials: ConnectionCredentials | undefined,
    sandbox: ProviderAccount,
  ): Promise<Outcome<Verified>> {
    const expiresAt = credentials?.expires_at ? new Date(credentials.expires_at).toISOString() : null;
    if (mode === 'test') return success({ account: sandbox, tokens: null, expiresAt });
    const available = liveNetwork(this.networks, channel);
    if (!available.ok) return available;
    const network = available.value;
    const warn = (message: string) => this.logger.warn(`the live check failed unexpectedly: ${message}`);
    const tokens = await freshForCheck(
      network,
      { accessToken: credentials!.access_token, refreshToken: credentials!.refresh_token ?? null, expiresAt },
      REFRESH_AHEAD_MS,
      warn,
    );
    if (!tokens.ok) return tokens;
    const read = await readAccount(network, tokens.value.accessToken, providerAccountId, warn);
    if (!read.ok) return read;
    return success({ account: read.value, tokens: tokens.value, expiresAt: tokens.value.expiresAt });
  }
}

const metadataOf = (caller: Caller) => ({ accountId: caller.accountId, mode: caller.mode, requestId: caller.requestId });
const missing = (id: string) => failure('resource_missing', `No such connection: ${id}`, 'id');
/** A revoked connection is gone for every command, as a deleted object is at Stripe (GET still shows it, `status: revoked`). */
const revoked = (id: string) => failure('resource_missing', `Connection ${id} was revoked (deleted or replaced); create a new connection instead.`, 'id');

/** Exactly one of credentials and redirect_uri with a live key; at most one with a test key (neither: a sandbox connection). */
function shapeRefusal(mode: Mode, credentials: ConnectionCredentials | undefined, redirectUri: string | undefined): Outcome<never> | null {
  if (credentials && redirectUri !== undefined)
    return failure('parameter_invalid', 'Send credentials (to import a token) or redirect_uri (to start OAuth), not both.', 'redirect_uri');
  if (mode === 'live' && !credentials && redirectUri === undefined)
    return failure('parameter_missing', 'A live connection needs credentials (a token to import) or redirect_uri (to start OAuth).', 'credentials');
  return null;
}
