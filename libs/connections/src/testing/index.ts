import type { Mode } from '@campaign-ops/account-domain';
import { AdNetwork, AdNetworks, NetworkSettings, ProviderAccount, TokenSet } from '@campaign-ops/ad-networks';
import { Channel, ProviderError } from '@campaign-ops/channels';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { SecretBox } from '@campaign-ops/secret-box';
import { Caller } from '@campaign-ops/service-messages';
import { ChannelSlots } from '../channel-slots';
import { ConnectionAccessService } from '../connection-access';
import { ConnectionCommands } from '../connection-commands';
import { ConnectionQueries } from '../connection-queries';
import { ConnectionSettings } from '../connection-settings';
import { ConnectionStore } from '../connection-store';
import { ChannelSettings } from '@campaign-ops/ad-networks';
import { OAuthRounds } from '../oauth-rounds';
import { TokenVault } from '../token-vault';

/**
 * An ad network as the port describes it, in memory: tokens it issued and accepts, ad accounts
 * each token reaches, codes it will exchange, refresh tokens it refuses, and switches to make it
 * stop answering or refuse this service's OAuth client. It counts its calls by kind (`calls`); it
 * keeps no record of the tokens it was shown.
 */
export class InMemoryNetwork implements AdNetwork {
  readonly scopes = ['ads_management', 'ads_read'];
  /** Whether it takes PKCE (as Google, Microsoft and Amazon do). */
  pkce = false;
  down = false;
  /** What `launchUnavailableReason` answers: set it to stand for a network missing a setting every call needs. */
  unavailableReason: string | null = null;
  /** The network refuses this service's OAuth client (a wrong client id or secret): the operator's fault, not the person's. */
  refuseClient = false;
  /** How long a refresh takes (to race concurrent refreshes against each other). */
  refreshDelayMs = 0;
  readonly calls = { authorizationUrl: 0, exchangeCode: 0, refresh: 0, readAccount: 0, revokeTokens: 0 };
  /** How long a revocation takes (to see a slow network not hold up a delete). */
  revokeDelayMs = 0;
  /** Access token → the ad accounts it reaches. */
  private readonly reach = new Map<string, Set<string>>();
  private readonly accounts = new Map<string, ProviderAccount>();
  private readonly codes = new Map<string, TokenSet>();
  private readonly refusedRefreshTokens = new Set<string>();
  private issued = 0;

  constructor(readonly channel: Channel = 'meta_ads') {}

  launchUnavailableReason(): string | null {
    return this.unavailableReason;
  }

  /** An ad account at the network, and a token that reaches it. */
  account(providerAccountId: string, account: ProviderAccount, accessToken: string): this {
    this.accounts.set(providerAccountId, account);
    this.reach.set(accessToken, new Set([...(this.reach.get(accessToken) ?? []), providerAccountId]));
    return this;
  }

  /** A code the consent page handed out, good for one exchange. */
  code(code: string, tokens: TokenSet, reaches: string[]): this {
    this.codes.set(code, tokens);
    this.reach.set(tokens.accessToken, new Set(reaches));
    return this;
  }

  refuseRefresh(refreshToken: string): this {
    this.refusedRefreshTokens.add(refreshToken);
    return this;
  }

  accepts(accessToken: string): boolean {
    return this.reach.has(accessToken);
  }

  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string; codeChallenge?: string }): string {
    this.calls.authorizationUrl++;
    const url = new URL('https://consent.network.example/dialog');
    url.searchParams.set('client_id', 'client-1');
    url.searchParams.set('redirect_uri', request.redirectUri);
    url.searchParams.set('scope', this.scopes.join(','));
    url.searchParams.set('state', request.state);
    return url.toString();
  }

  async exchangeCode(request: { code: string; redirectUri: string; codeVerifier?: string }): Promise<TokenSet> {
    this.calls.exchangeCode++;
    this.failIfDown();
    this.failIfClientRefused();
    const tokens = this.codes.get(request.code);
    if (!tokens || !request.redirectUri.endsWith('/v1/connections/oauth/callback')) throw new ProviderError('auth', 'invalid code', 'invalid_grant', 400);
    this.codes.delete(request.code);
    return tokens;
  }

  async refresh(refreshToken: string): Promise<TokenSet> {
    this.calls.refresh++;
    if (this.refreshDelayMs) await new Promise((done) => setTimeout(done, this.refreshDelayMs));
    this.failIfDown();
    this.failIfClientRefused();
    if (this.refusedRefreshTokens.has(refreshToken)) throw new ProviderError('auth', 'The refresh token is invalid', 'invalid_grant', 400);
    this.issued++;
    const accessToken = `refreshed-access-${this.issued}`;
    this.reach.set(accessToken, new Set(this.accounts.keys()));
    return { accessToken, refreshToken: null, expiresAt: new Date(Date.now() + 3_600_000).toISOString() };
  }

  /** Revokes the grant of this access token (it stops working). Down: a transient ProviderError. */
  async revokeTokens(tokens: { accessToken: string; refreshToken: string | null }): Promise<void> {
    this.calls.revokeTokens++;
    if (this.revokeDelayMs) await new Promise((done) => setTimeout(done, this.revokeDelayMs));
    this.failIfDown();
    if (!this.reach.has(tokens.accessToken)) throw new ProviderError('auth', 'Invalid OAuth access token', '190', 400);
    this.reach.delete(tokens.accessToken);
  }

  async readAccount(access: { accessToken: string; providerAccountId: string }): Promise<ProviderAccount> {
    this.calls.readAccount++;
    this.failIfDown();
    const reaches = this.reach.get(access.accessToken);
    if (!reaches) throw new ProviderError('auth', 'Invalid OAuth access token', '190', 400);
    const account = this.accounts.get(access.providerAccountId);
    if (!account || !reaches.has(access.providerAccountId)) throw new ProviderError('account_unreachable', 'Unsupported get request', '100', 400);
    return account;
  }

  async createCampaign(): Promise<{ providerResourceId: string }> {
    throw new Error('connection-service never creates campaigns');
  }

  async findCampaigns(): Promise<never[]> {
    throw new Error('connection-service never looks for campaigns');
  }

  async validateCampaign(): Promise<never> {
    throw new Error('connection-service never checks campaigns');
  }

  private failIfClientRefused(): void {
    if (this.refuseClient)
      throw new ProviderError('validation', 'meta_ads refused the grant (invalid_client): client authentication failed', 'invalid_client', 401);
  }

  private failIfDown(): void {
    if (this.down) throw new ProviderError('transient', 'Service temporarily unavailable', null, 503);
  }
}

export const settingsFor = (channel: Channel, configured: boolean): NetworkSettings => ({
  channel,
  apiUrl: 'https://api.network.example',
  oauthUrl: 'https://consent.network.example/dialog',
  tokenUrl: 'https://api.network.example/token',
  clientId: configured ? 'client-1' : null,
  clientSecret: configured ? 'client-secret-1' : null,
  developerToken: null,
  timeoutMs: 5_000,
});

export interface ConnectionsHarness {
  events: SqliteEventStore;
  reads: SqliteReadStore;
  settings: ConnectionSettings;
  store: ConnectionStore;
  vault: TokenVault;
  slots: ChannelSlots;
  rounds: OAuthRounds;
  commands: ConnectionCommands;
  queries: ConnectionQueries;
  access: ConnectionAccessService;
  /** Another replica of connection-service over the same stores (its own locks). */
  replica(): { access: ConnectionAccessService; rounds: OAuthRounds; commands: ConnectionCommands };
  close(): Promise<void>;
}

/** connection-service's providers over in-memory SQLite stores, wired as ConnectionsModule wires them. */
export function connectionsHarness(networks: AdNetworks, networkSettings: ChannelSettings): ConnectionsHarness {
  const events = SqliteEventStore.open(':memory:');
  const reads = SqliteReadStore.open(':memory:');
  const settings: ConnectionSettings = {
    encryptionKey: SecretBox.generateHexKey(),
    previousEncryptionKey: null,
    publicBaseUrl: 'https://api.campaign-ops.example',
    refreshSweepMs: 60_000,
  };
  const build = () => {
    const store = new ConnectionStore(events, reads);
    const vault = new TokenVault(reads, settings);
    const slots = new ChannelSlots(store, vault);
    const rounds = new OAuthRounds(store, vault, slots, networks, networkSettings, settings);
    return {
      store,
      vault,
      slots,
      rounds,
      commands: new ConnectionCommands(store, vault, slots, rounds, networks),
      queries: new ConnectionQueries(store),
      access: new ConnectionAccessService(store, vault, networks),
    };
  };
  return {
    events,
    reads,
    settings,
    ...build(),
    replica: () => build(),
    close: async () => {
      await events.close();
      await reads.close();
    },
  };
}

export const callerOf = (accountId: string, mode: Mode): Caller => ({ accountId, mode, requestId: `req_${accountId}_${mode}` });
