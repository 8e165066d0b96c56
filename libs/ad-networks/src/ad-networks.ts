import { Dispatcher } from 'undici';
import { Channel } from '@campaign-ops/channels';
import { AdNetwork, AdNetworks, NetworkSettings } from './ad-network.port';
import { NetworkHttp } from './network-http';
import { GoogleAds } from './channels/google-ads';
import { MetaAds } from './channels/meta-ads';
import { TiktokAds } from './channels/tiktok-ads';
import { LinkedinAds } from './channels/linkedin-ads';
import { MicrosoftAds } from './channels/microsoft-ads';
import { SnapchatAds } from './channels/snapchat-ads';
import { PinterestAds } from './channels/pinterest-ads';
import { RedditAds } from './channels/reddit-ads';
import { XAds } from './channels/x-ads';
import { AmazonAds } from './channels/amazon-ads';

export interface AdNetworkOptions {
  /** Tests: an undici Agent that trusts the fake networks' CA. Production: Node's CA store. */
  dispatcher?: Dispatcher;
}

type AdapterFactory = (settings: NetworkSettings, http: NetworkHttp) => AdNetwork;

/** One line per channel with a live adapter (its file in ./channels holds every fact of that network). */
const ADAPTERS = {
  google_ads: (settings, http) => new GoogleAds(settings, http),
  meta_ads: (settings, http) => new MetaAds(settings, http),
  tiktok_ads: (settings, http) => new TiktokAds(settings, http),
  linkedin_ads: (settings, http) => new LinkedinAds(settings, http),
  microsoft_ads: (settings, http) => new MicrosoftAds(settings, http),
  snapchat_ads: (settings, http) => new SnapchatAds(settings, http),
  pinterest_ads: (settings, http) => new PinterestAds(settings, http),
  reddit_ads: (settings, http) => new RedditAds(settings, http),
  x_ads: (settings, http) => new XAds(settings, http),
  amazon_ads: (settings, http) => new AmazonAds(settings, http),
} satisfies Partial<Record<Channel, AdapterFactory>>;

/** The channels that have a live adapter. */
export type LiveChannel = keyof typeof ADAPTERS;
/** The port's `AdNetworks`, known to hold every live channel. */
export type LiveAdNetworks = Record<LiveChannel, AdNetwork> & AdNetworks;

export const LIVE_CHANNELS = Object.keys(ADAPTERS) as LiveChannel[];

/** Every live adapter, each with its own HTTP client (timeout and label) over one shared dispatcher. */
export function createAdNetworks(settings: Record<Channel, NetworkSettings>, options: AdNetworkOptions = {}): LiveAdNetworks {
  const entries = Object.entries(ADAPTERS as Partial<Record<Channel, AdapterFactory>>).map(([channel, create]) => {
    const channelSettings = settings[channel as Channel];
    return [channel, create!(channelSettings, new NetworkHttp(channel, channelSettings.timeoutMs, { dispatcher: options.dispatcher }))];
  });
  return Object.fromEntries(entries) as LiveAdNetworks;
}
