/**
 * Revoking a connection's grant at the network (DELETE /v1/connections/:id), against fakes that
 * answer as each network documents its revocation: the call, the client authentication and the
 * token each one wants. Networks that document no revocation have no `revokeTokens`.
 */
import { ProviderError } from '@campaign-ops/channels';
import {
  closeFakeNetworkDispatcher,
  FakeNetwork,
  fakeNetworkDispatcher,
  GoogleAdsFake,
  LinkedinAdsFake,
  MetaAdsFake,
  RedditAdsFake,
} from '../../../test/support/fake-networks';
import { AdNetwork } from './ad-network.port';
import { GoogleAds } from './channels/google-ads';
import { LinkedinAds } from './channels/linkedin-ads';
import { MetaAds } from './channels/meta-ads';
import { RedditAds } from './channels/reddit-ads';
import { NetworkHttp } from './network-http';

type Case = [string, { start: () => Promise<FakeNetwork>; adapter: (fake: FakeNetwork, http: NetworkHttp) => AdNetwork; expected: (fake: FakeNetwork, tokens: { accessToken: string; refreshToken: string | null }) => unknown }];

const CASES: Case[] = [
  [
    'google_ads: POST /revoke with the refresh token alone',
    { start: () => GoogleAdsFake.start(), adapter: (fake, http) => new GoogleAds(fake.settings(), http), expected: (_fake, tokens) => ({ method: 'POST', path: '/revoke', body: { token: tokens.refreshToken } }) },
  ],
  [
    'linkedin_ads: POST /oauth/v2/revoke with the client in the body',
    {
      start: () => LinkedinAdsFake.start(),
      adapter: (fake, http) => new LinkedinAds(fake.settings(), http),
      expected: (fake, tokens) => ({ method: 'POST', path: '/oauth/v2/revoke', body: { token: tokens.refreshToken, client_id: fake.clientId, client_secret: fake.clientSecret } }),
    },
  ],
  [
    'reddit_ads: POST /api/v1/revoke_token with HTTP Basic and the token type',
    {
      start: () => RedditAdsFake.start(),
      adapter: (fake, http) => new RedditAds(fake.settings(), http),
      expected: (_fake, tokens) => ({ method: 'POST', path: '/api/v1/revoke_token', body: { token: tokens.refreshToken, token_type_hint: 'refresh_token' } }),
    },
  ],
  [
    "meta_ads: DELETE /me/permissions with the user's token",
    { start: () => MetaAdsFake.start(), adapter: (fake, http) => new MetaAds(fake.settings(), http), expected: () => ({ method: 'DELETE', path: '/v24.0/me/permissions', body: undefined }) },
  ],
];

describe.each(CASES)('revoking the grant, %s', (_name, { start, adapter, expected }) => {
  let fake: FakeNetwork;
  let network: AdNetwork;

  beforeAll(async () => {
    fake = await start();
    network = adapter(fake, new NetworkHttp(fake.channel, 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  it('ends the grant the way the network documents it', async () => {
    const tokens = { accessToken: fake.issueAccessToken(), refreshToken: fake.channel === 'meta_ads' ? null : fake.issueRefreshToken() };
    await network.revokeTokens!(tokens);
    const sent = fake.requests[fake.requests.length - 1];
    expect({ method: sent.method, path: sent.path, body: sent.body && Object.keys(sent.body as object).length > 0 ? sent.body : undefined }).toEqual(expected(fake, tokens));
    expect(fake.revoked).toEqual([tokens.refreshToken ?? tokens.accessToken]);
  });

  it('throws a ProviderError when the network refuses (a token already revoked), without the token in its message', async () => {
    const tokens = { accessToken: 'at-never-issued', refreshToken: fake.channel === 'meta_ads' ? null : 'rt-never-issued' };
    const error = await network.revokeTokens!(tokens).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).not.toMatch(/never-issued/);
  });
});
