import type { Mode } from '@campaign-ops/account-domain';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { AD_NETWORKS, AdNetwork, AdNetworks, oauthConfigured, TokenSet } from '@campaign-ops/ad-networks';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { Channel, ProviderError } from '@campaign-ops/channels';
import { Connection, ConnectionResource, oauthRoundFor, OAuthStateSpent, OAuthStateUnknown, toConnectionResource } from '@campaign-ops/connection-domain';
import { EventMetadata } from '@campaign-ops/event-sourcing';
import { OAuthCallbackRequest, OAuthCallbackResult } from '@campaign-ops/service-messages';
import { ChannelSlots } from './channel-slots';
import { CONNECTION_SETTINGS, ConnectionSettings, oauthCallbackUrl } from './connection-settings';
import { ConnectionStore } from './connection-store';
import { KeyedMutex } from '@campaign-ops/event-sourcing';
import { ChannelSettings, NETWORK_SETTINGS } from '@campaign-ops/ad-networks';
import { REFRESH_AHEAD_MS } from './connection-access';
import { freshForCheck, liveNetwork, readAccount, redacted } from './provider-calls';
import { checkRedirectUri, withQuery } from './redirect-uri';
import { TokenVault } from './token-vault';

const STATE_LIFETIME_MS = 15 * 60_000;
/**
 * How long past its expiry a spent state still sends the browser back to the partner (a person
 * who pressed back, a second tab). After it, the state is answered as one never issued: a 302 to
 * the partner's redirect_uri is not ours to give forever, to anyone, without an API key.
 */
export const SPENT_STATE_WINDOW_MS = 24 * 60 * 60_000;
/** State records deleted per page, and per sweep at most this many pages. */
const SWEEP_PAGE = 100;
const SANDBOX_ACCOUNT = { currency: 'USD', timezone: 'UTC' };

export const hashState = (state: string) => createHash('sha256').update(state).digest('hex');

/** What CompleteOAuth throws when the round ended after its state was checked. */
const roundLost = (error: unknown) => error instanceof OAuthStateSpent || error instanceof OAuthStateUnknown;

export interface RoundRequest {
  connectionId: string;
  accountId: string;
  mode: Mode;
  channel: Channel;
  providerAccountId: string;
  redirectUri: string;
  /** The account's registered OAuth redirect URIs (docs/api.md#keys-and-modes). */
  registeredRedirectUris: readonly string[];
  /** The simulated ad account a test key's round ends with. */
  sandbox: { currency: string; timezone: string } | null;
}

/** What the browser is told on its way back to the partner (docs/api.md#connections-and-oauth). */
type BackError = 'access_denied' | 'state_invalid' | 'credentials_invalid' | 'provider_account_unreachable' | 'provider_unavailable' | 'connection_exists';

/**
 * OAuth rounds (docs/api.md#connections-and-oauth): a new connection's or a reauthorization's consent. The round's
 * `state` is random, used once, bound to its connection and good for 15 minutes; only its SHA-256
 * is kept. The person's browser comes back to the service's own callback, which exchanges the
 * code, reads the ad account with the token, activates the connection and sends the browser on
 * to the partner's `redirect_uri`.
 *
 * A test key's round is simulated: its consent page is the callback itself (with a sandbox code),
 * so partners can exercise their redirect handling without a network.
 */
@Injectable()
export class OAuthRounds {
  private readonly logger = new Logger('oauth');
  private readonly lock = new KeyedMutex();

  constructor(
    private readonly store: ConnectionStore,
    private readonly vault: TokenVault,
    private readonly slots: ChannelSlots,
    @Inject(AD_NETWORKS) private readonly networks: AdNetworks,
    @Inject(NETWORK_SETTINGS) private readonly networkSettings: ChannelSettings,
    @Inject(CONNECTION_SETTINGS) private readonly settings: ConnectionSettings,
  ) {}

  /** What a round on `channel` needs before anything is written: a usable redirect_uri and, live, an OAuth client. */
  prepare(mode: Mode, channel: Channel, redirectUri: string, registered: readonly string[]): Outcome<{ redirectUri: string; network: AdNetwork | null }> {
    const checked = checkRedirectUri(redirectUri, { mode, registered });
    if (!checked.ok) return checked;
    if (mode === 'test') return success({ redirectUri: checked.value, network: null });
    const settings = this.networkSettings[channel];
    if (!settings || !oauthConfigured(settings)) {
      return failure(
        'channel_not_configured',
        `OAuth on ${channel} needs CHANNEL_${channel.toUpperCase()}_CLIENT_ID and _CLIENT_SECRET, which this service does not have; import a token instead.`,
        'channel',
      );
    }
    const network = liveNetwork(this.networks, channel);
    if (!network.ok) return network;
    return success({ redirectUri: checked.value, network: network.value });
  }

  /** Starts a round for a new connection (`existing: false`) or an existing one: the connection with its `authorization_url`. */
  async start(request: RoundRequest, existing: boolean, metadata: EventMetadata): Promise<Outcome<ConnectionResource & { authorization_url: string }>> {
    const prepared = this.prepare(request.mode, request.channel, request.redirectUri, request.registeredRedirectUris);
    if (!prepared.ok) return prepared;
    const { network, redirectUri } = prepared.value;
    const state = randomBytes(32).toString('base64url');
    const now = new Date();
    const oauth = { stateHash: hashState(state), redirectUri, expiresAt: new Date(now.getTime() + STATE_LIFETIME_MS).toISOString() };
    const callback = oauthCallbackUrl(this.settings);
    let authorizationUrl: string;
    if (!network) {
      authorizationUrl = withQuery(callback, { code: 'sandbox', state });
    } else {
      const codeChallenge = network.pkce ? pkceFor(state, this.settings.encryptionKey).challenge : undefined;
      const consent = await this.consentUrl(network, { state, redirectUri: callback, providerAccountId: request.providerAccountId, codeChallenge });
      if (!consent.ok) return consent;
      authorizationUrl = consent.value;
    }
    // The state's record first: a round whose command then fails leaves a record the callback calls unknown.
    await this.store.oauthStates.insert({
      id: oauth.stateHash,
      connection_id: request.connectionId,
      account_id: request.accountId,
      mode: request.mode,
      redirect_uri: redirectUri,
      expires_at: oauth.expiresAt,
      sandbox: request.mode === 'test' ? (request.sandbox ?? SANDBOX_ACCOUNT) : null,
      consent_binding: network?.consentBinding?.(authorizationUrl) ?? null,
      created_at: now.toISOString(),
    });
    const { connectionId, accountId, mode, channel, providerAccountId } = request;
    const connection = existing
      ? await this.store.execute(connectionId, { type: 'StartReauthorization', oauth, now: now.toISOString() }, metadata)
      : await this.store.execute(
          connectionId,
          {
            type: 'StartOAuth',
            connectionId,
            accountId,
            mode,
            channel,
            providerAccountId,
            scopes: [...(network?.scopes ?? [])],
            oauth,
            now: now.toISOString(),
          },
          metadata,
        );
    return success({ ...toConnectionResource(connection), authorization_url: authorizationUrl });
  }

  /**
   * The browser's return. A state never issued (or past its time, or spent more than
   * SPENT_STATE_WINDOW_MS ago) answers 400 `state_invalid`: there is no partner to send the
   * browser to. Everything else sends it back to the partner.
   */
  async complete(request: OAuthCallbackRequest): Promise<Outcome<OAuthCallbackResult>> {
    const unknown = failure('state_invalid', 'This authorization link is unknown or has expired; start the connection again.', 'state');
    if (!request.state) return unknown;
    const stateHash = hashState(request.state);
    const record = await this.store.oauthStates.get(stateHash);
    if (!record || Date.now() >= Date.parse(record.expires_at) + SPENT_STATE_WINDOW_MS) return unknown;
    const back = (params: Record<string, string>) => success({ location: withQuery(record.redirect_uri, params) });
    const backWith = (error: BackError) => back({ error });

    return this.lock.run(record.connection_id, async () => {
      const connection = await this.store.load(record.connection_id);
      try {
        oauthRoundFor(connection ?? { status: 'none' }, stateHash, new Date().toISOString());
      } catch (error) {
        if (error instanceof OAuthStateSpent) return backWith('state_invalid');
        if (error instanceof OAuthStateUnknown) return unknown;
        throw error;
      }
      const current = connection as Connection;
      const network = current.mode === 'live' ? this.networks[current.channel as Channel] : undefined;
      // Most networks come back with `code` (or `error`); some with their own parameters, which their adapter reads.
      let code: string | null;
      try {
        code = network?.callbackCode
          ? network.callbackCode({ ...request.query, state: request.state }, record.consent_binding)
          : request.error
            ? null
            : (request.code ?? null);
      } catch (error) {
        // The browser brought another round's consent back on this round's state.
        if (error instanceof ProviderError) return backWith('state_invalid');
        throw error;
      }
      if (!code) return backWith('access_denied');
      const metadata = { accountId: current.accountId, mode: current.mode, requestId: request.requestId };

      let tokens: TokenSet | null = null;
      let account = record.sandbox ?? SANDBOX_ACCOUNT;
      if (current.mode === 'live') {
        if (!network) return backWith('provider_unavailable');
        const exchanged = await this.exchange(network, code, network.pkce ? pkceFor(request.state!, this.settings.encryptionKey).verifier : undefined);
        if (!exchanged.ok) return backWith(exchanged.error);
        const warn = (message: string) => this.logger.warn(`the live check failed unexpectedly: ${message}`);
        // A network may hand out a token that lives less than our refresh margin (or a clock may disagree): refreshed before the check, as before any call.
        const fresh = await freshForCheck(network, exchanged.value, REFRESH_AHEAD_MS, warn);
        if (!fresh.ok) return backWith(fresh.error.code === 'provider_unavailable' ? 'provider_unavailable' : 'credentials_invalid');
        tokens = fresh.value;
        const read = await readAccount(network, tokens.accessToken, current.providerAccountId, warn);
        if (!read.ok) return backWith(read.error.code as BackError);
        account = read.value;
      }
      const { id: connectionId, accountId, mode, channel, providerAccountId } = current;
      let activated: Outcome<Connection>;
      try {
        activated = await this.slots.activate({ connectionId, accountId, mode, channel, providerAccountId }, metadata, async () => {
          const now = new Date().toISOString();
          if (tokens) await this.vault.store(connectionId, tokens);
          try {
            return await this.store.execute(
              connectionId,
              { type: 'CompleteOAuth', stateHash, scopes: current.scopes, account, expiresAt: tokens?.expiresAt ?? null, now },
              metadata,
            );
          } catch (error) {
            if (tokens && roundLost(error)) await this.discardTokens(connectionId);
            throw error;
          }
        });
      } catch (error) {
        // The round ended while the network was called: deleted meanwhile, taken by another replica, or past its time.
        if (roundLost(error)) return backWith('state_invalid');
        throw error;
      }
      if (!activated.ok) return backWith('connection_exists');
      return back({ connection_id: connectionId, status: activated.value.status });
    });
  }

  /**
   * Tokens just stored for a round that then could not complete: destroyed when the connection
   * was revoked meanwhile or never became active (no tokens of its own to keep). A connection
   * active or waiting for reauthorization keeps the tokens now on file: they replaced its own, and
   * reach its ad account (the read just proved it).
   */
  private async discardTokens(connectionId: string): Promise<void> {
    const now = await this.store.load(connectionId);
    if (!now || now.status === 'revoked' || now.status === 'pending') await this.vault.destroy(connectionId);
  }

  /**
   * Deletes the state records whose window has closed (SPENT_STATE_WINDOW_MS past their expiry),
   * used or not: the callback answers them as never issued anyway. At most `limit` per call, a
   * page at a time through the `expires_at` index; the next sweep goes on where this one stopped.
   */
  async sweepStates(now: Date = new Date(), limit = 10 * SWEEP_PAGE): Promise<number> {
    const cutoff = new Date(now.getTime() - SPENT_STATE_WINDOW_MS).toISOString();
    let deleted = 0;
    for (let pages = Math.ceil(limit / SWEEP_PAGE); pages > 0 && deleted < limit; pages--) {
      const page = await this.store.oauthStates.find({ expires_at: { $lt: cutoff } }, { limit: Math.min(SWEEP_PAGE, limit - deleted), order: 'asc' });
      for (const record of page.items) if (await this.store.oauthStates.delete(record.id)) deleted++;
      if (!page.hasMore) break;
    }
    return deleted;
  }

  /** The consent page: built from the settings, or (X's OAuth 1.0a) made by a call to the network. */
  private async consentUrl(
    network: AdNetwork,
    request: { state: string; redirectUri: string; providerAccountId: string; codeChallenge?: string },
  ): Promise<Outcome<string>> {
    if (!network.startConsent) return success(network.authorizationUrl(request));
    try {
      return success(await network.startConsent(request));
    } catch (error) {
      if (error instanceof ProviderError && (error.kind === 'auth' || error.kind === 'validation')) {
        return failure(
          'channel_not_configured',
          `${network.channel} refused this service's OAuth client (CHANNEL_${network.channel.toUpperCase()}_CLIENT_ID and _CLIENT_SECRET).`,
          'channel',
        );
      }
      if (!(error instanceof ProviderError))
        this.logger.warn(`starting the ${network.channel} consent failed unexpectedly: ${redacted(error, [request.state])}`);
      return failure('provider_unavailable', `${network.channel} did not answer; try again shortly.`);
    }
  }

  private async exchange(
    network: AdNetwork,
    code: string,
    codeVerifier: string | undefined,
  ): Promise<{ ok: true; value: TokenSet } | { ok: false; error: BackError }> {
    try {
      return { ok: true, value: await network.exchangeCode({ code, redirectUri: oauthCallbackUrl(this.settings), ...(codeVerifier ? { codeVerifier } : {}) }) };
    } catch (error) {
      if (error instanceof ProviderError && (error.kind === 'auth' || error.kind === 'validation')) return { ok: false, error: 'credentials_invalid' };
      if (!(error instanceof ProviderError)) this.logger.warn(`code exchange failed unexpectedly: ${redacted(error, [code])}`);
      return { ok: false, error: 'provider_unavailable' };
    }
  }
}

/**
 * PKCE (RFC 7636, S256) for a round, derived from its state with the service's key: the state comes
 * back with the browser, so nothing more is stored, and without the key a code and state
 * intercepted on their way back give no verifier. (A key rotated during a round's 15 minutes
 * fails that round's exchange: the person consents again.)
 */
export function pkceFor(state: string, key: string): { verifier: string; challenge: string } {
  const verifier = createHmac('sha256', Buffer.from(key, 'hex')).update(`pkce-verifier\n${state}`).digest('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
