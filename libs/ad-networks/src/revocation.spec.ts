/**
 * Revoking a connection's grant at the network (DELETE /v1/connections/:id), against fakes that
 * answer as each network documents its revocation: the call, the client authentication and the
 * token each one wants. Networks that document no revocation we can use have no `revokeTokens`.
 */
import { Channel, ProviderError } from '@campaign-ops/channels';
import {
  closeFakeNetworkDispatcher,
  FakeNetwork,
  fakeNetworkDispatcher,
  GoogleAdsFake,
  LinkedinAdsFake,
  MetaAdsFake,
  RecordedRequest,
  RedditAdsFake,
  XAdsFake,
} from '../../../test/support/fake-networks';
import { AdNetwork, NetworkSettings } from './ad-network.port';
import { AmazonAds } from './channels/amazon-ads';
import { GoogleAds } from './channels/google-ads';
import { LinkedinAds } from './channels/linkedin-ads';
import { MetaAds } from './channels/meta-ads';
import { MicrosoftAds } from './channels/microsoft-ads';
import { PinterestAds } from './channels/pinterest-ads';
import { RedditAds } from './channels/reddit-ads';
import { SnapchatAds } from './channels/snapchat-ads';
import { TiktokAds } from './channels/tiktok-ads';
import { XAds } from './channels/x-ads';
import { NetworkHttp } from './network-http';

type Tokens = { accessToken: string; refreshToken: string | null };
interface Case {
  start: () => Promise<FakeNetwork>;
  adapter: (fake: FakeNetwork, http: NetworkHttp) => AdNetwork;
  /** Whether the network's grants carry a refresh token (the one revoked when there is one). */
  refreshes: boolean;
  /** The call as the network documents it: method, path and body. */
  expected: (fake: FakeNetwork, tokens: Tokens) => { method: string; path: string; body: unknown };
  /** How the client or the user authenticates it. */
  authorization: (fake: FakeNetwork, tokens: Tokens) => unknown;
  /** Tokens the network never issued, as a connection holds them. */
  unknown: Tokens;
}

const basic = (fake: FakeNetwork) => `Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString('base64')}`;
const neverIssued = (refreshes: boolean): Tokens => ({ accessToken: 'at-never-issued', refreshToken: refreshes ? 'rt-never-issued' : null });

const CASES: Array<[string, Case]> = [
  [
    'google_ads: POST /revoke with the refresh token alone',
    {
      start: () => GoogleAdsFake.start(),
      adapter: (fake, http) => new GoogleAds(fake.settings(), http),
      refreshes: true,
      expected: (_fake, tokens) => ({ method: 'POST', path: '/revoke', body: { token: tokens.refreshToken } }),
      authorization: () => undefined,
      unknown: neverIssued(true),
    },
  ],
  [
    'linkedin_ads: POST /oauth/v2/revoke with the client in the body',
    {
      start: () => LinkedinAdsFake.start(),
      adapter: (fake, http) => new LinkedinAds(fake.settings(), http),
      refreshes: true,
      expected: (fake, tokens) => ({
        method: 'POST',
        path: '/oauth/v2/revoke',
        body: { token: tokens.refreshToken, client_id: fake.clientId, client_secret: fake.clientSecret },
      }),
      authorization: () => undefined,
      unknown: neverIssued(true),
    },
  ],
  [
    'reddit_ads: POST /api/v1/revoke_token with HTTP Basic and the token type',
    {
      start: () => RedditAdsFake.start(),
      adapter: (fake, http) => new RedditAds(fake.settings(), http),
      refreshes: true,
      expected: (_fake, tokens) => ({ method: 'POST', path: '/api/v1/revoke_token', body: { token: tokens.refreshToken, token_type_hint: 'refresh_token' } }),
      authorization: (fake) => basic(fake),
      unknown: neverIssued(true),
    },
  ],
  [
    "meta_ads: DELETE /me/permissions with the user's token",
    {
      start: () => MetaAdsFake.start(),
      adapter: (fake, http) => new MetaAds(fake.settings(), http),
      refreshes: false,
      expected: () => ({ method: 'DELETE', path: '/v24.0/me/permissions', body: undefined }),
      authorization: (_fake, tokens) => `Bearer ${tokens.accessToken}`,
      unknown: neverIssued(false),
    },
  ],
  [
    "x_ads: POST /1.1/oauth/invalidate_token, signed (OAuth 1.0a) with the user's token",
    {
      start: () => XAdsFake.start(),
      adapter: (fake, http) => new XAds(fake.settings(), http),
      refreshes: false,
      expected: () => ({ method: 'POST', path: '/1.1/oauth/invalidate_token', body: undefined }),
      authorization: (fake, tokens) =>
        expect.stringMatching(new RegExp(`^OAuth .*oauth_consumer_key="${fake.clientId}".*oauth_token="${tokens.accessToken.split(':')[0]}"`)),
      unknown: { accessToken: 'at-never-issued:st-never-issued', refreshToken: null },
    },
  ],
];

describe.each(CASES)('revoking the grant, %s', (_name, { start, adapter, refreshes, expected, authorization, unknown }) => {
  let fake: FakeNetwork;
  let network: AdNetwork;
  const issue = (): Tokens => ({ accessToken: fake.issueAccessToken(), refreshToken: refreshes ? fake.issueRefreshToken() : null });
  const shape = (sent: RecordedRequest) => ({
    method: sent.method,
    path: sent.path,
    body: sent.body && Object.keys(sent.body as object).length > 0 ? sent.body : undefined,
  });

  beforeAll(async () => {
    fake = await start();
    network = adapter(fake, new NetworkHttp(fake.channel, 5_000, { dispatcher: await fakeNetworkDispatcher() }));
  });
  afterAll(async () => {
    await fake.close();
    await closeFakeNetworkDispatcher();
  });

  it('ends the grant the way the network documents it', async () => {
    const tokens = issue();
    await network.revokeTokens!(tokens);
    const sent = fake.requests[fake.requests.length - 1];
    expect(shape(sent)).toEqual(expected(fake, tokens));
    expect(sent.headers.authorization).toEqual(authorization(fake, tokens));
    expect(fake.revoked).toEqual([tokens.refreshToken ?? tokens.accessToken]);
  });

  it('throws a ProviderError when the network refuses (a token already revoked), without the token in its message', async () => {
    const tokens = issue();
    await network.revokeTokens!(tokens);
    const again = await network.revokeTokens!(tokens).catch((caught: unknown) => caught);
    expect(again).toBeInstanceOf(ProviderError);
    const error = await network.revokeTokens!(unknown).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProviderError);
    expect(`${(again as Error).message} ${(error as Error).message}`).not.toMatch(/never-issued|at-|rt-/);
  });
});

describe('networks whose documented revocation a connection cannot use make no call', () => {
  const settings = (channel: Channel): NetworkSettings => ({
    channel,
    apiUrl: 'https://network.invalid',
    oauthUrl: 'https://network.invalid/oauth',
    tokenUrl: 'https://network.invalid/token',
    clientId: 'client',
    clientSecret: 'secret',
    developerToken: 'developer-token',
    timeoutMs: 1_000,
  });
  const http = new NetworkHttp('none', 1_000);

  it.each<[string, AdNetwork]>([
    ['pinterest_ads (its revocation takes system users’ tokens only)', new PinterestAds(settings('pinterest_ads'), http)],
    ['snapchat_ads (none documented for the Marketing API)', new SnapchatAds(settings('snapchat_ads'), http)],
    ['microsoft_ads (none for one grant)', new MicrosoftAds(settings('microsoft_ads'), http)],
    ['amazon_ads (none documented by Login with Amazon)', new AmazonAds(settings('amazon_ads'), http)],
    ['tiktok_ads (none on its Marketing API pages)', new TiktokAds(settings('tiktok_ads'), http)],
  ])('%s', (_name, network) => {
    expect(network.revokeTokens).toBeUndefined();
  });
});
