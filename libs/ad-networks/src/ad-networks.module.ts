import { Module, OnApplicationShutdown } from '@nestjs/common';
import { AD_NETWORKS } from './ad-network.port';
import { createAdNetworks } from './ad-networks';
import { closeNetworkConnections } from './network-http';
import { loadNetworkSettings } from './network-settings';

/**
 * The live ad networks of this process, built once from `CHANNEL_<CHANNEL>_*` at start (a bad
 * value stops the app, naming the variable) and shared by whoever imports the module: the
 * dispatch executor (campaigns) and connection-service (OAuth, refresh, the ad account read).
 */
@Module({
  providers: [{ provide: AD_NETWORKS, useFactory: () => createAdNetworks(loadNetworkSettings(process.env)) }],
  exports: [AD_NETWORKS],
})
export class AdNetworksModule implements OnApplicationShutdown {
  /** The process-wide keep-alive pool to the networks, closed once everything else has stopped. */
  async onApplicationShutdown(): Promise<void> {
    await closeNetworkConnections();
  }
}
