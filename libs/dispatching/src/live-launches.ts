import { Inject, Injectable, Logger } from '@nestjs/common';
import { AD_NETWORKS, AdNetwork, AdNetworks } from '@campaign-ops/ad-networks';
import { ErrorBody, Outcome } from '@campaign-ops/api-errors';
import { Bus, BUS } from '@campaign-ops/bus';
import { Channel, ProviderError } from '@campaign-ops/channels';
import { Dispatch, DispatchError } from '@campaign-ops/dispatch-domain';
import { currentRequestId } from '@campaign-ops/service-runtime';
import { ConnectionAccess, ConnectionAccessRequest, ConnectionReauthRequiredRequest, SUBJECTS } from '@campaign-ops/service-messages';

/**
 * What one try of a launch came to. `tried` says whether a provider call was made at all (a
 * dispatch that fails before any call keeps `attempts` as it was); `retryAfterMs` is the
 * network's own delay before the next try, when it named one.
 */
export type LaunchOutcome =
  | { kind: 'created'; providerResourceId: string }
  | { kind: 'failed'; error: DispatchError; tried: boolean; retryAfterMs: number | null };

/** How long the executor waits for connection-service; past it the message is redelivered. */
export const CONNECTION_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A live dispatch against its ad network (API.md §3, "Execution"): a fresh token from
 * connection-service (the only holder of tokens), the budget's currency checked against the ad
 * account's before any call, then the network's campaign creation. A token the network refuses
 * is refreshed once and the try repeated; refused again, or the refresh refused, the dispatch
 * fails with `connection_reauth_required` and the connection moves to `reauth_required`.
 */
@Injectable()
export class LiveLaunches {
  private readonly logger = new Logger('live-launches');

  constructor(
    @Inject(AD_NETWORKS) private readonly networks: AdNetworks,
    @Inject(BUS) private readonly bus: Bus,
  ) {}

  /** Whether live launches can run on `channel` in this process (an adapter exists and is configured for it). */
  available(channel: Channel): boolean {
    const network = this.networks[channel];
    return network !== undefined && (network.launchUnavailableReason?.() ?? null) === null;
  }

  async launch(dispatch: Dispatch): Promise<LaunchOutcome> {
    const network = this.networks[dispatch.channel];
    const unavailable = network ? (network.launchUnavailableReason?.() ?? null) : `no live adapter for ${dispatch.channel}`;
    if (!network || unavailable !== null || !dispatch.connectionId) {
      const message = `Live launches on ${dispatch.channel} cannot run here (${unavailable ?? 'the dispatch has no connection'}).`;
      return failedBeforeTry({ code: 'provider_unavailable', message, provider_code: null, retryable: true }, null);
    }
    const first = await this.access(dispatch, false);
    if (!first.ok) return this.accessRefused(first.error, false);
    const { currency } = dispatch.campaign.budget;
    if (currency !== first.value.currency) {
      const message = `The budget is in ${currency} but the ${dispatch.channel} ad account ${first.value.providerAccountId} bills in ${first.value.currency}.`;
      return failedBeforeTry({ code: 'provider_validation_failed', message, provider_code: 'currency_mismatch', retryable: false }, null);
    }
    try {
      return await this.create(network, dispatch, first.value);
    } catch (error) {
      if (!refusesTheToken(error)) return classify(error, this.logger);
    }
    // The network refused the token: refresh it once (unless it was replaced meanwhile) and repeat the try.
    const refreshed = await this.access(dispatch, true, first.value.tokenVersion);
    if (!refreshed.ok) return this.accessRefused(refreshed.error, true);
    try {
      return await this.create(network, dispatch, refreshed.value);
    } catch (error) {
      if (!refusesTheToken(error)) return classify(error, this.logger);
      const reason = error instanceof ProviderError && error.providerCode ? `token_refused:${error.providerCode}` : 'token_refused';
      await this.reportReauthRequired(dispatch, reason, refreshed.value.tokenVersion);
      return { kind: 'failed', error: reauthError(dispatch.channel, error as ProviderError), tried: true, retryAfterMs: null };
    }
  }

  /**
   * Tells connection-service that a token it gave out is refused (`connectionId` null: the
   * channel's sandbox connection, for `[sandbox:reauth]`). Done before the dispatch's outcome is
   * recorded, so a crash in between repeats it rather than losing it; it is idempotent.
   */
  async reportReauthRequired(dispatch: Dispatch, reason: string, refusedVersion?: number): Promise<void> {
    const request: ConnectionReauthRequiredRequest = {
      accountId: dispatch.accountId,
      mode: dispatch.mode,
      connectionId: dispatch.connectionId,
      channel: dispatch.channel,
      reason,
      ...(refusedVersion === undefined ? {} : { refusedVersion }),
      requestId: currentRequestId() ?? null,
    };
    await this.bus.request(SUBJECTS.connectionReauthRequired, request, { timeoutMs: CONNECTION_REQUEST_TIMEOUT_MS, headers: this.headers() });
  }

  private async create(network: AdNetwork, dispatch: Dispatch, access: ConnectionAccess): Promise<LaunchOutcome> {
    const created = await network.createCampaign(
      { accessToken: access.accessToken, providerAccountId: access.providerAccountId, account: { currency: access.currency, timezone: access.timezone } },
      { dispatchId: dispatch.id, campaign: dispatch.campaign },
    );
    return { kind: 'created', providerResourceId: created.providerResourceId };
  }

  /** A bus fault (connection-service down) throws: the message comes back later and nothing is recorded. */
  private async access(dispatch: Dispatch, forceRefresh: boolean, refusedVersion?: number): Promise<Outcome<ConnectionAccess>> {
    const request: ConnectionAccessRequest = {
      accountId: dispatch.accountId,
      mode: dispatch.mode,
      connectionId: dispatch.connectionId as string,
      forceRefresh,
      ...(refusedVersion === undefined ? {} : { refusedVersion }),
      requestId: currentRequestId() ?? null,
    };
    return this.bus.request<Outcome<ConnectionAccess>>(SUBJECTS.connectionAccess, request, { timeoutMs: CONNECTION_REQUEST_TIMEOUT_MS, headers: this.headers() });
  }

  /**
   * connection-service could not give a token: the network was down while refreshing (retry
   * later), or the connection needs the person to authorize again (it has moved it already).
   */
  private accessRefused(error: ErrorBody, tried: boolean): LaunchOutcome {
    if (error.code === 'provider_unavailable' || error.code === 'service_unavailable') {
      return { kind: 'failed', error: { code: 'provider_unavailable', message: error.message, provider_code: null, retryable: true }, tried: true, retryAfterMs: null };
    }
    const message =
      error.code === 'connection_required'
        ? `The connection this dispatch ran on was revoked or replaced (${error.message}). Retry the dispatch: a retry runs on the channel's connection then.`
        : `The connection cannot be used: ${error.message} Reauthorize it (POST /v1/connections/:id/reauthorize), then retry the dispatch.`;
    return { kind: 'failed', error: { code: 'connection_reauth_required', message, provider_code: error.code, retryable: false }, tried, retryAfterMs: null };
  }

  private headers(): Record<string, string> {
    const requestId = currentRequestId();
    return requestId ? { 'X-Request-Id': requestId } : {};
  }
}

const failedBeforeTry = (error: DispatchError, retryAfterMs: number | null): LaunchOutcome => ({ kind: 'failed', error, tried: false, retryAfterMs });

/** A dead, expired or under-scoped token, or one that no longer reaches the ad account. */
const refusesTheToken = (error: unknown): boolean => error instanceof ProviderError && (error.kind === 'auth' || error.kind === 'account_unreachable');

const reauthError = (channel: Channel, error: ProviderError): DispatchError => ({
  code: 'connection_reauth_required',
  message: `${channel} refused the connection's token (${error.message}). Reauthorize the connection, then retry the dispatch.`,
  provider_code: error.providerCode,
  retryable: false,
});

/** The outcome of a try that failed for a reason other than the token. */
export function classify(error: unknown, logger: Logger): LaunchOutcome {
  if (error instanceof ProviderError) {
    switch (error.kind) {
      case 'validation':
        return { kind: 'failed', error: { code: 'provider_validation_failed', message: error.message, provider_code: error.providerCode, retryable: false }, tried: true, retryAfterMs: null };
      case 'rate_limited':
      case 'transient':
        return { kind: 'failed', error: { code: 'provider_unavailable', message: error.message, provider_code: error.providerCode, retryable: true }, tried: true, retryAfterMs: error.retryAfterMs };
      case 'auth':
      case 'account_unreachable':
        return { kind: 'failed', error: { code: 'connection_reauth_required', message: error.message, provider_code: error.providerCode, retryable: false }, tried: true, retryAfterMs: null };
    }
  }
  // Not a provider's answer (a network fault, a bug): treat as transient, and say so in the log.
  logger.warn(`provider call failed unexpectedly: ${(error as Error).message}`);
  return { kind: 'failed', error: { code: 'provider_unavailable', message: 'The provider could not be reached.', provider_code: null, retryable: true }, tried: true, retryAfterMs: null };
}
