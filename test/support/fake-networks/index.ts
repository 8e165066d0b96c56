// Loopback HTTPS fakes of the ad networks, for the adapters' specs and the end-to-end tests.
// An e2e starts one (`await GoogleAdsFake.start({ accounts: [...] })`), gives the service process
// `fake.env()` plus NODE_EXTRA_CA_CERTS=fake.caCertPath, and reads `fake.requests` / `fake.created`.
export {
  FakeNetwork,
  closeFakeNetworkDispatcher,
  fakeNetworkCertificates,
  fakeNetworkDispatcher,
  followConsent,
  refusingLoopbackUrl,
  type FakeAccount,
  type FakeAnswer,
  type FakeNetworkOptions,
  type OAuthShape,
  type RecordedRequest,
} from './fake-network';
export { SnapchatAdsFake } from './snapchat-ads.fake';
export { PinterestAdsFake } from './pinterest-ads.fake';
export { GoogleAdsFake } from './google-ads.fake';
export { MetaAdsFake } from './meta-ads.fake';
export { TiktokAdsFake } from './tiktok-ads.fake';
export { LinkedinAdsFake } from './linkedin-ads.fake';
export { MicrosoftAdsFake } from './microsoft-ads.fake';
export { unifiedCampaign } from './unified-campaign';
export { RedditAdsFake } from './reddit-ads.fake';
export { XAdsFake } from './x-ads.fake';
export { AmazonAdsFake } from './amazon-ads.fake';
export { rejection } from './rejection';
