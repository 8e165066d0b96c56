import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { AdNetwork, AdNetworks, ProviderAccount, TokenSet } from '@campaign-ops/ad-networks';
import { Channel, ProviderError } from '@campaign-ops/channels';

/** An error's message with every secret in it replaced: for logs, which must never hold a token. */
export function redacted(error: unknown, secrets: Array<string | null | undefined>): string {
  let message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  for (const secret of secrets) if (secret) message = message.split(secret).join('[redacted]');
  return message;
}

/**
 * The network a live connection of `channel` is checked and used through, or 422
 * `channel_live_unavailable` before any call: no adapter for it, or one that cannot make any call
 * with this service's settings (Google Ads without its developer token, say). Refused here, a
 * token is not blamed for what the service lacks.
 */
export function liveNetwork(networks: AdNetworks, channel: Channel): Outcome<AdNetwork> {
  const network = networks[channel];
  if (!network) return failure('channel_live_unavailable', `Live connections to ${channel} are not available yet; use a test key for the sandbox.`, 'channel');
  const unavailable = network.launchUnavailableReason?.() ?? null;
  if (unavailable) return failure('channel_live_unavailable', `Live connections to ${channel} cannot be made on this service: ${unavailable}.`, 'channel');
  return success(network);
}

/**
 * The live check of docs/api.md#connections-and-oauth: the ad account read with the token. A refused token is
 * `credentials_invalid`, an account the token cannot reach (or that the network does not know)
 * `provider_account_unreachable`, a network that does not answer `provider_unavailable`. The
 * network's own words are not passed on (they are the network's, and could quote what was sent).
 */
export async function readAccount(
  network: AdNetwork,
  accessToken: string,
  providerAccountId: string,
  onUnexpected: (message: string) => void,
): Promise<Outcome<ProviderAccount>> {
  try {
    return success(await network.readAccount({ accessToken, providerAccountId }));
  } catch (error) {
    if (!(error instanceof ProviderError)) onUnexpected(redacted(error, [accessToken]));
    return accountReadFailure(error, network.channel, providerAccountId);
  }
}

/**
 * Tokens about to be checked live (the import's and the OAuth callback's live check, docs/api.md#connections-and-oauth):
 * refreshed first when they have expired or expire within `refreshAheadMs` and a refresh token
 * came with them, so that a token migrated from another system after its hour is still taken.
 * The refresh refused is `credentials_invalid` (param `credentials.refresh_token`); the network not
 * answering `provider_unavailable`. This service's OAuth client refused (not configured for the
 * channel, or wrong) leaves the tokens as they came: the live check then decides.
 */
export async function freshForCheck(
  network: AdNetwork,
  tokens: TokenSet,
  refreshAheadMs: number,
  onUnexpected: (message: string) => void,
): Promise<Outcome<TokenSet>> {
  if (!tokens.refreshToken || tokens.expiresAt === null || Date.parse(tokens.expiresAt) - Date.now() > refreshAheadMs) return success(tokens);
  try {
    const refreshed = await network.refresh(tokens.refreshToken);
    return success({ accessToken: refreshed.accessToken, refreshToken: refreshed.refreshToken ?? tokens.refreshToken, expiresAt: refreshed.expiresAt });
  } catch (error) {
    const kind = error instanceof ProviderError ? error.kind : 'transient';
    if (!(error instanceof ProviderError)) onUnexpected(redacted(error, [tokens.accessToken, tokens.refreshToken]));
    switch (kind) {
      case 'auth':
      case 'account_unreachable':
        return failure(
          'credentials_invalid',
          `${network.channel} refused the refresh token, and the access token is past (or within minutes of) its expiry.`,
          'credentials.refresh_token',
        );
      case 'validation':
        onUnexpected(`${network.channel} refused this service's OAuth client refreshing an imported token; checking the token as it came`);
        return success(tokens);
      case 'transient':
      case 'rate_limited':
        return failure('provider_unavailable', `${network.channel} did not answer the token refresh; try again shortly.`);
    }
  }
}

export function accountReadFailure(error: unknown, channel: string, providerAccountId: string): Outcome<never> {
  const kind = error instanceof ProviderError ? error.kind : 'transient';
  switch (kind) {
    case 'auth':
      return failure('credentials_invalid', `${channel} refused the access token.`, 'credentials.access_token');
    case 'account_unreachable':
    case 'validation':
      return failure('provider_account_unreachable', `The token cannot reach ${channel} ad account ${providerAccountId}.`, 'provider_account_id');
    case 'transient':
    case 'rate_limited':
      return failure('provider_unavailable', `${channel} did not answer; try again shortly.`);
  }
}
