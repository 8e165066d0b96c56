import { CampaignSpec, Channel, ProviderError } from '@campaign-ops/channels';

/**
 * One live ad network, as connection-service (OAuth, token refresh, the ad account read) and the
 * dispatch executor (campaign creation) use it. Each channel implements it in one file that holds
 * every fact of that network (paths, headers, units, objectives, schedule formats, error signals).
 *
 * Every refusal is a `ProviderError` (from @campaign-ops/channels) whose `kind` says what to do:
 * - `validation`: the network refused the request itself (its own message and code kept);
 * - `auth`: the token is dead or lacks scope: refresh, then re-authenticate;
 * - `rate_limited`: slow down; `retryAfterMs` is the network's own delay when it gives one;
 * - `transient`: 5xx, timeouts, connection faults: retry with backoff;
 * - `account_unreachable`: the token works but cannot reach this ad account.
 * A network that does not answer at all is `transient` with `providerCode: null`.
 */
export interface AdNetwork {
  readonly channel: Channel;
  /** The scopes asked for in the consent URL, as the network spells them. */
  readonly scopes: readonly string[];

  /**
   * Whether the network takes PKCE (RFC 7636, S256): the caller then gives `codeChallenge` to
   * `authorizationUrl` and the matching `codeVerifier` to `exchangeCode`, so a code intercepted on
   * its way back is worth nothing without the verifier.
   */
  readonly pkce?: boolean;
  /** The consent page to send a person's browser to. Needs the client id (`channel_not_configured` otherwise: checked by the caller with `oauthConfigured`). */
  authorizationUrl(request: { state: string; redirectUri: string; providerAccountId: string; codeChallenge?: string }): string;
  /**
   * For a network whose consent starts with a call (X's OAuth 1.0a request token): the consent
   * URL, made by that call. Callers use it when present, `authorizationUrl` otherwise.
   */
  startConsent?(request: { state: string; redirectUri: string; providerAccountId: string }): Promise<string>;
  /**
   * For a network that sends the browser back with other parameters than `code` (X:
   * `oauth_token`, `oauth_verifier`, or `denied`): the code for `exchangeCode`, or null when the
   * person refused. The callback's whole query is given (`state` included).
   */
  callbackCode?(query: Record<string, string | undefined>, binding?: string | null): string | null;
  /**
   * For a network whose consent URL carries a value of this round alone (X: the request token):
   * that value, kept with the round; the callback's `callbackCode` is given it and throws (`auth`)
   * when the browser comes back with another round's, so one round's consent cannot complete another.
   */
  consentBinding?(authorizationUrl: string): string | null;
  /**
   * Trades an authorization code for tokens at the network's token URL. A refused code is `auth`;
   * this service's OAuth client refused (`invalid_client`) is `validation`, as for `refresh`.
   */
  exchangeCode(request: { code: string; redirectUri: string; codeVerifier?: string }): Promise<TokenSet>;
  /**
   * New tokens from a refresh token. The grant refused (`invalid_grant`) is `auth`: the person must
   * consent again. This service's OAuth client refused (`invalid_client`, `unauthorized_client`, a
   * 401 to client authentication) is `validation` with providerCode `invalid_client`: the
   * operator's configuration, which moves no connection.
   */
  refresh(refreshToken: string): Promise<TokenSet>;
  /**
   * Revokes the grant at the network (DELETE /v1/connections/:id), where it documents a way: the
   * refresh token where there is one (the whole grant), else the access token. Throws a
   * ProviderError when the network refuses or does not answer; the caller destroys its copy anyway.
   * Networks without a documented revocation leave it out (their adapter's header says so).
   */
  revokeTokens?(tokens: { accessToken: string; refreshToken: string | null }): Promise<void>;
  /** The live check made before a connection becomes active: proves the token reaches the ad account. */
  readAccount(access: AccountAccess): Promise<ProviderAccount>;
  /**
   * Why live launches cannot run with the settings this network was built with (e.g. Google Ads
   * without its developer token), or null when they can. Absent: they always can. A launch on a
   * channel that answers a reason is refused with 422 `channel_live_unavailable`.
   */
  launchUnavailableReason?(): string | null;
  /**
   * Creates the campaign (one "try": may be several calls, e.g. Google's budget then campaign),
   * carrying the dispatch's marker (campaign-marker.ts, or the network's own reference field) so
   * that `findCampaigns` finds it again. `found: true` when the network said the campaign exists
   * already and the adapter answered that one instead (Google's DUPLICATE_CAMPAIGN_NAME).
   */
  createCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CreatedCampaign>;
  /**
   * The campaigns that carry the dispatch's marker at the network, oldest first; empty when there
   * is none. Asked before any try that follows an outcome the executor could not be sure of. A
   * lookup the network refuses or does not answer throws, as any call does (`transient` is retried).
   */
  findCampaigns(access: LiveAccess, request: LiveCampaignRequest): Promise<FoundCampaign[]>;
  /**
   * The dry run (docs/api.md#dispatches-and-retries, `POST /v1/campaigns/validate`): the network's own validate-only call
   * where it has one (`provider`; nothing is created), else every rule the adapter applies before
   * a call (`rules`; no call at all). A refusal throws `validation` with the network's message and code.
   */
  validateCampaign(access: LiveAccess, request: LiveCampaignRequest): Promise<CampaignCheck>;
}

/** What a live call needs: the token, the ad account id, and the account's currency and time zone. */
export type LiveAccess = AccountAccess & { account: ProviderAccount };

export interface CreatedCampaign {
  providerResourceId: string;
  /** The network answered that it had this campaign already (found by the marker while creating). */
  found?: boolean;
}

export interface FoundCampaign {
  providerResourceId: string;
  /** As the network says it (ISO 8601 or its own form), when it does; for the log only. */
  createdAt?: string | null;
}

export interface CampaignCheck {
  checkedBy: 'provider' | 'rules';
  /** The network's or the adapter's remarks that do not refuse the campaign (e.g. Meta's recommendations). */
  warnings: string[];
}

export interface AccountAccess {
  accessToken: string;
  providerAccountId: string;
}

export interface LiveCampaignRequest {
  dispatchId: string;
  campaign: CampaignSpec;
}

/** What the network says of the ad account: ISO 4217 currency and IANA time zone. */
export interface ProviderAccount {
  currency: string;
  timezone: string;
}

export interface TokenSet {
  accessToken: string;
  /** Null when the network issues none (Meta); the refresh token on file is then kept. */
  refreshToken: string | null;
  /** ISO 8601 UTC, from `expires_in`; null when the token does not expire. */
  expiresAt: string | null;
}

/** Where a network lives and who we are to it: read from `CHANNEL_<CHANNEL>_*` (docs/api.md#connections-and-oauth). */
export interface NetworkSettings {
  channel: Channel;
  apiUrl: string;
  oauthUrl: string;
  tokenUrl: string;
  clientId: string | null;
  clientSecret: string | null;
  /** Google Ads (`CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN`) and Microsoft Advertising (`CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN`, its SOAP `DeveloperToken` header); null elsewhere. */
  developerToken: string | null;
  /** Per-call timeout. */
  timeoutMs: number;
}

export const oauthConfigured = (settings: NetworkSettings): boolean => Boolean(settings.clientId && settings.clientSecret);

export { ProviderError };

/** Injection token of the live networks a process can call: one `AdNetwork` per configured channel. */
export const AD_NETWORKS = Symbol('AD_NETWORKS');
export type AdNetworks = Partial<Record<Channel, AdNetwork>>;
