import { Inject, Injectable, Logger } from '@nestjs/common';
import { AD_NETWORKS, AdNetwork, AdNetworks, CampaignCheck, LiveAccess } from '@campaign-ops/ad-networks';
import { ErrorBody, failure, Outcome, providerRefusal, success } from '@campaign-ops/api-errors';
import { Bus, BUS } from '@campaign-ops/bus';
import { Channel, ProviderError } from '@campaign-ops/channels';
import { Dispatch, DispatchError } from '@campaign-ops/dispatch-domain';
import { newId } from '@campaign-ops/ids';
import { currentRequestId, requestService } from '@campaign-ops/service-runtime';
import { ConnectionAccess, ConnectionAccessRequest, ConnectionReauthRequiredRequest, SUBJECTS } from '@campaign-ops/service-messages';

/**
 * What one try of a launch came to. `tried` says whether a provider call was made at all (a
 * dispatch that fails before any call keeps `attempts` as it was); `retryAfterMs` is the
 * network's own delay before the next try, when it named one; `outcomeUnknown`: the network may
 * hold a campaign of this dispatch that no answer named (the next try looks for it first).
 * `reconciled`: the campaign was found by the dispatch's marker, made by an earlier try whose
 * outcome was lost; `duplicates`: other campaigns with the marker (the oldest is adopted).
 * `taken`: another delivery of the same work started this try first; this one does nothing.
 */
export type LaunchOutcome =
  | { kind: 'created'; providerResourceId: string; reconciled: boolean; duplicates: string[] }
  | { kind: 'failed'; error: DispatchError; tried: boolean; retryAfterMs: number | null; outcomeUnknown: boolean }
  | { kind: 'taken' };

/**
 * Records that a try is starting, before the network is called (DispatchAttemptStarted): whether
 * it must look for the campaign first, or null when another delivery started it first.
 */
export type StartTry = () => Promise<{ lookup: boolean } | null>;

/** How long the executor waits for connection-service; past it the message is redelivered. */
export const CONNECTION_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A live dispatch against its ad network (docs/api.md#dispatches-and-retries, "Execution"): the budget's currency checked
 * against the ad account's and a fresh token, both from connection-service (the only holder of
 * tokens, which checks the currency before it reads or refreshes anything), then the try: it is
 * recorded as started, looks for the dispatch's campaign first when an earlier try may have made
 * it ("At most one campaign per dispatch"), and creates it otherwise. A token the network refuses
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

  async launch(dispatch: Dispatch, startTry: StartTry): Promise<LaunchOutcome> {
    const network = this.networks[dispatch.channel];
    const unavailable = network ? (network.launchUnavailableReason?.() ?? null) : `no live adapter for ${dispatch.channel}`;
    if (!network || unavailable !== null || !dispatch.connectionId) {
      const message = `Live launches on ${dispatch.channel} cannot run here (${unavailable ?? 'the dispatch has no connection'}).`;
      return failedBeforeTry({ code: 'provider_unavailable', message, provider_code: null, retryable: true });
    }
    const first = await this.access(dispatch, false);
    if (!first.ok) return this.accessRefused(first.error, false, false);
    const mismatch = currencyMismatch(dispatch, first.value);
    if (mismatch) return failedBeforeTry(mismatch);

    const started = await startTry();
    if (!started) return { kind: 'taken' };
    const doubt: Doubt = { unresolved: started.lookup };
    try {
      return await this.tryWith(network, dispatch, first.value, doubt);
    } catch (error) {
      if (!refusesTheToken(error)) return classify(error, this.logger, doubt.unresolved);
    }
    // The network refused the token: refresh it once (unless it was replaced meanwhile) and repeat
    // the try, looking first: a network whose try makes several objects (X: a campaign, then its
    // line item) may have made one before it refused the token.
    doubt.unresolved = true;
    const refreshed = await this.access(dispatch, true, first.value.tokenVersion);
    if (!refreshed.ok) return this.accessRefused(refreshed.error, true, doubt.unresolved);
    try {
      return await this.tryWith(network, dispatch, refreshed.value, doubt);
    } catch (error) {
      if (!refusesTheToken(error)) return classify(error, this.logger, doubt.unresolved);
      const reason = error instanceof ProviderError && error.providerCode ? `token_refused:${error.providerCode}` : 'token_refused';
      await this.reportReauthRequired(dispatch, reason, refreshed.value.tokenVersion);
      return {
        kind: 'failed',
        error: reauthError(dispatch.channel, error as ProviderError),
        tried: true,
        retryAfterMs: null,
        outcomeUnknown: doubt.unresolved,
      };
    }
  }

  /**
   * The dry run of a live launch (docs/api.md#dispatches-and-retries, `POST /v1/campaigns/validate`): the same currency
   * check and token as a launch, then the network's validate-only call where it has one (the
   * adapter's rules otherwise). Nothing is recorded; a refused token is refreshed once, as for a
   * launch. The campaign is checked under a dispatch id of its own, so that the marker a launch
   * adds to its name is checked too.
   */
  async check(target: LaunchTarget): Promise<Outcome<CampaignCheck>> {
    const network = this.networks[target.channel];
    if (!network) return failure('channel_live_unavailable', `Live dispatches to ${target.channel} cannot run on this service.`, 'channel');
    const request = { dispatchId: newId('dsp'), campaign: target.campaign };
    const first = await this.access(target, false);
    if (!first.ok) return checkRefused(first.error);
    const mismatch = currencyMismatch(target, first.value);
    if (mismatch) return providerRefusal(mismatch.message, mismatch.provider_code);
    try {
      return success(await network.validateCampaign(liveAccessOf(first.value), request));
    } catch (error) {
      if (!refusesTheToken(error)) return checkFailed(error, this.logger);
    }
    const refreshed = await this.access(target, true, first.value.tokenVersion);
    if (!refreshed.ok) return checkRefused(refreshed.error);
    try {
      return success(await network.validateCampaign(liveAccessOf(refreshed.value), request));
    } catch (error) {
      if (!refusesTheToken(error)) return checkFailed(error, this.logger);
      return failure('connection_reauth_required', reauthError(target.channel, error as ProviderError).message, 'channel');
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
    await requestService(this.bus, SUBJECTS.connectionReauthRequired, request, { timeoutMs: CONNECTION_REQUEST_TIMEOUT_MS });
  }

  /**
   * One try with a token: when a campaign may exist that no answer named, the network is asked for
   * it first (found: adopted, the oldest of several); then the campaign is created. `doubt` follows
   * what is known: settled by a lookup that answered, open again when a create's answer is lost.
   */
  private async tryWith(network: AdNetwork, dispatch: Dispatch, access: ConnectionAccess, doubt: Doubt): Promise<LaunchOutcome> {
    const live = liveAccessOf(access);
    const request = { dispatchId: dispatch.id, campaign: dispatch.campaign };
    if (doubt.unresolved) {
      const [oldest, ...others] = await network.findCampaigns(live, request);
      doubt.unresolved = false;
      if (oldest) {
        if (others.length > 0)
          this.logger.warn(
            `${dispatch.id}: ${dispatch.channel} holds ${others.length + 1} campaigns with its marker; adopting the oldest, ${oldest.providerResourceId}`,
          );
        return {
          kind: 'created',
          providerResourceId: oldest.providerResourceId,
          reconciled: true,
          duplicates: others.map((found) => found.providerResourceId),
        };
      }
    }
    try {
      const created = await network.createCampaign(live, request);
      return { kind: 'created', providerResourceId: created.providerResourceId, reconciled: created.found === true, duplicates: [] };
    } catch (error) {
      doubt.unresolved = mayHaveCreated(error);
      throw error;
    }
  }

  /** A bus fault (connection-service down) throws: the message comes back later and nothing is recorded. */
  private async access(dispatch: LaunchTarget, forceRefresh: boolean, refusedVersion?: number): Promise<Outcome<ConnectionAccess>> {
    const request: ConnectionAccessRequest = {
      accountId: dispatch.accountId,
      mode: dispatch.mode,
      connectionId: dispatch.connectionId as string,
      forceRefresh,
      ...(refusedVersion === undefined ? {} : { refusedVersion }),
      currency: dispatch.campaign.budget.currency,
      requestId: currentRequestId() ?? null,
    };
    return requestService<Outcome<ConnectionAccess>>(this.bus, SUBJECTS.connectionAccess, request, { timeoutMs: CONNECTION_REQUEST_TIMEOUT_MS });
  }

  /**
   * connection-service could not give a token: the budget's currency is not the ad account's,
   * the network was down while refreshing (retry later), or the connection needs the person to
   * authorize again (it has moved it already).
   */
  private accessRefused(error: ErrorBody, tried: boolean, outcomeUnknown: boolean): LaunchOutcome {
    if (error.code === 'provider_validation_failed') {
      return {
        kind: 'failed',
        error: { code: 'provider_validation_failed', message: error.message, provider_code: error.provider_code ?? null, retryable: false },
        tried,
        retryAfterMs: null,
        outcomeUnknown,
      };
    }
    if (error.code === 'provider_unavailable' || error.code === 'service_unavailable') {
      return {
        kind: 'failed',
        error: { code: 'provider_unavailable', message: error.message, provider_code: null, retryable: true },
        tried: true,
        retryAfterMs: null,
        outcomeUnknown,
      };
    }
    const message =
      error.code === 'connection_required'
        ? `The connection this dispatch ran on was revoked or replaced (${error.message}). Retry the dispatch: a retry runs on the channel's connection then.`
        : `The connection cannot be used: ${error.message} Reauthorize it (POST /v1/connections/:id/reauthorize), then retry the dispatch.`;
    return {
      kind: 'failed',
      error: { code: 'connection_reauth_required', message, provider_code: error.code, retryable: false },
      tried,
      retryAfterMs: null,
      outcomeUnknown,
    };
  }
}

/** What a launch or its dry run is about. */
export type LaunchTarget = Pick<Dispatch, 'accountId' | 'mode' | 'channel' | 'campaign' | 'connectionId'>;

const liveAccessOf = (access: ConnectionAccess): LiveAccess => ({
  accessToken: access.accessToken,
  providerAccountId: access.providerAccountId,
  account: { currency: access.currency, timezone: access.timezone },
});

/** The dry run when connection-service gives no token: its answer, but a network that is down is the network's 502. */
function checkRefused(error: ErrorBody): Outcome<never> {
  if (error.code === 'provider_unavailable' || error.code === 'service_unavailable') return failure('provider_unavailable', error.message);
  return { ok: false, error: { ...error, param: error.code === 'provider_validation_failed' ? 'campaign.budget.currency' : 'channel' } };
}

/** The dry run refused by the network (422, with its message and code), or the network not answering (502). */
function checkFailed(error: unknown, logger: Logger): Outcome<never> {
  if (error instanceof ProviderError && error.kind === 'validation') return providerRefusal(error.message, error.providerCode);
  if (!(error instanceof ProviderError)) logger.warn(`a dry run failed unexpectedly: ${(error as Error).message}`);
  return failure('provider_unavailable', error instanceof ProviderError ? error.message : 'The provider could not be reached.');
}

/** Whether a campaign may exist that no answer named (see `tryWith`). */
interface Doubt {
  unresolved: boolean;
}

const failedBeforeTry = (error: DispatchError): LaunchOutcome => ({ kind: 'failed', error, tried: false, retryAfterMs: null, outcomeUnknown: false });

/** The budget's currency against the ad account's (connection-service checks it first; this covers one that does not yet). */
function currencyMismatch(dispatch: LaunchTarget, access: ConnectionAccess): DispatchError | null {
  const { currency } = dispatch.campaign.budget;
  if (currency === access.currency) return null;
  const message = `The budget is in ${currency} but the ${dispatch.channel} ad account ${access.providerAccountId} bills in ${access.currency}.`;
  return { code: 'provider_validation_failed', message, provider_code: 'currency_mismatch', retryable: false };
}

/**
 * Whether a create that threw may have made the campaign all the same: no answer (a timeout, a
 * reset, a dropped connection) or a server error may come after the network made it; a refusal
 * it answered (validation, token, account, slow down) made nothing.
 */
export const mayHaveCreated = (error: unknown): boolean => !(error instanceof ProviderError) || error.kind === 'transient';

/** A dead, expired or under-scoped token, or one that no longer reaches the ad account. */
const refusesTheToken = (error: unknown): boolean => error instanceof ProviderError && (error.kind === 'auth' || error.kind === 'account_unreachable');

const reauthError = (channel: Channel, error: ProviderError): DispatchError => ({
  code: 'connection_reauth_required',
  message: `${channel} refused the connection's token (${error.message}). Reauthorize the connection, then retry the dispatch.`,
  provider_code: error.providerCode,
  retryable: false,
});

/** The outcome of a try that failed for a reason other than the token; `outcomeUnknown` as the try left it. */
export function classify(error: unknown, logger: Logger, outcomeUnknown = false): LaunchOutcome {
  const failed = (error: DispatchError, retryAfterMs: number | null = null): LaunchOutcome => ({
    kind: 'failed',
    error,
    tried: true,
    retryAfterMs,
    outcomeUnknown,
  });
  if (error instanceof ProviderError) {
    switch (error.kind) {
      case 'validation':
        return failed({ code: 'provider_validation_failed', message: error.message, provider_code: error.providerCode, retryable: false });
      case 'rate_limited':
      case 'transient':
        return failed({ code: 'provider_unavailable', message: error.message, provider_code: error.providerCode, retryable: true }, error.retryAfterMs);
      case 'auth':
      case 'account_unreachable':
        return failed({ code: 'connection_reauth_required', message: error.message, provider_code: error.providerCode, retryable: false });
    }
  }
  // Not a provider's answer (a network fault, a bug): treat as transient, and say so in the log.
  logger.warn(`provider call failed unexpectedly: ${(error as Error).message}`);
  return failed({ code: 'provider_unavailable', message: 'The provider could not be reached.', provider_code: null, retryable: true });
}
