import { Module, OnApplicationShutdown } from '@nestjs/common';
import { Channel } from '@campaign-ops/channels';
import { AD_NETWORKS, NetworkSettings } from './ad-network.port';
import { createAdNetworks } from './ad-networks';
import { closeNetworkConnections } from './network-http';
import { loadNetworkSettings } from './network-settings';

/** Each channel's `CHANNEL_<CHANNEL>_*` settings (whether it has an OAuth client decides if OAuth can start). */
export const NETWORK_SETTINGS = Symbol('NETWORK_SETTINGS');
export type ChannelSettings = Partial<Record<Channel, NetworkSettings>>;

/**
 * The live ad networks of this process and their settings, read once from `CHANNEL_<CHANNEL>_*`
 * at start (a bad value stops the app, naming the variable) and shared by whoever imports the
 * module: the dispatch executor (campaigns) and connection-service (OAuth, refresh, the ad
 * account read).
 */
@Module({
  providers: [
    { provide: NETWORK_SETTINGS, useFactory: () => loadNetworkSettings(process.env) },
    { provide: AD_NETWORKS, useFactory: (settings: Record<Channel, NetworkSettings>) => createAdNetworks(settings), inject: [NETWORK_SETTINGS] },
  ],
  exports: [AD_NETWORKS, NETWORK_SETTINGS],
})
export class AdNetworksModule implements OnApplicationShutdown {
  /** The process-wide keep-alive pool to the networks, closed once everything else has stopped. */
  async onApplicationShutdown(): Promise<void> {
    await closeNetworkConnections();
  }
}
