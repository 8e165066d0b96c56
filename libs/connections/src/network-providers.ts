import { AD_NETWORKS, AdNetworks, createAdNetworks, loadNetworkSettings, NetworkSettings } from '@campaign-ops/ad-networks';
import { Channel } from '@campaign-ops/channels';

/** Each channel's `CHANNEL_<CHANNEL>_*` settings: whether it has an OAuth client decides if OAuth can start. */
export const NETWORK_SETTINGS = Symbol('NETWORK_SETTINGS');
export type ChannelSettings = Partial<Record<Channel, NetworkSettings>>;

/**
 * The live networks connection-service calls (OAuth, refresh, the ad account read), and their
 * settings, read once at start from the environment (a bad value stops the app, naming it).
 */
export const networkProviders = [
  { provide: NETWORK_SETTINGS, useFactory: (): ChannelSettings => loadNetworkSettings(process.env) },
  { provide: AD_NETWORKS, useFactory: (settings: Record<Channel, NetworkSettings>): AdNetworks => createAdNetworks(settings), inject: [NETWORK_SETTINGS] },
];
