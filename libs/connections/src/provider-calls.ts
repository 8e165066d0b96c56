import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { AdNetwork, ProviderAccount } from '@campaign-ops/ad-networks';
import { ProviderError } from '@campaign-ops/channels';

/** An error's message with every secret in it replaced: for logs, which must never hold a token. */
export function redacted(error: unknown, secrets: Array<string | null | undefined>): string {
  let message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  for (const secret of secrets) if (secret) message = message.split(secret).join('[redacted]');
  return message;
}

/**
 * The live check of API.md §4: the ad account read with the token. A refused token is
 * `credentials_invalid`, an account the token cannot reach (or that the network does not know)
 * `provider_account_unreachable`, a network that does not answer `provider_unavailable`. The
 * network's own words are not passed on (they are the network's, and could quote what was sent).
 */
export async function readAccount(network: AdNetwork, accessToken: string, providerAccountId: string, onUnexpected: (message: string) => void): Promise<Outcome<ProviderAccount>> {
  try {
    return success(await network.readAccount({ accessToken, providerAccountId }));
  } catch (error) {
    if (!(error instanceof ProviderError)) onUnexpected(redacted(error, [accessToken]));
    return accountReadFailure(error, network.channel, providerAccountId);
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
