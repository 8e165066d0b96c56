import { loadNetworkSettings, NetworkSettings } from '@campaign-ops/ad-networks';
import { Channel } from '@campaign-ops/channels';

/** Each channel's `CHANNEL_<CHANNEL>_*` settings: whether it has an OAuth client decides if OAuth can start. */
export const NETWORK_SETTINGS = Symbol('NETWORK_SETTINGS');
export type ChannelSettings = Partial<Record<Channel, NetworkSettings>>;

/**
 * The settings, read once at start from the environment (a bad value stops the app, naming it).
 * The networks themselves (AD_NETWORKS) come from AdNetworksModule, shared with dispatch-service
 * where both run in one process.
 */
export const networkSettingsProvider = { provide: NETWORK_SETTINGS, useFactory: (): ChannelSettings => loadNetworkSettings(process.env) };
