import { Module } from '@nestjs/common';
import { AdNetworksModule } from '@campaign-ops/ad-networks';
import { ChannelSlots } from './channel-slots';
import { ConnectionAccessService } from './connection-access';
import { ConnectionCommands } from './connection-commands';
import { ConnectionProcessors } from './connection-processors';
import { ConnectionQueries } from './connection-queries';
import { connectionSettingsProvider } from './connection-settings';
import { ConnectionStore } from './connection-store';
import { ConnectionsMessageController } from './connections.message.controller';
import { OAuthRounds } from './oauth-rounds';
import { TokenVault } from './token-vault';
import { VaultKeyCheck } from './vault-key-check';

/**
 * connection-service: owns connections (docs/api.md#connections-and-oauth): their streams and view, the token vault,
 * OAuth rounds, token refresh (on demand and by a sweep) and reauthorization. Its message
 * controller says what it answers; ConnectionProcessors follow its event store.
 */
@Module({
  imports: [AdNetworksModule],
  controllers: [ConnectionsMessageController],
  providers: [
    connectionSettingsProvider,
    ConnectionStore,
    TokenVault,
    ChannelSlots,
    OAuthRounds,
    ConnectionCommands,
    ConnectionQueries,
    ConnectionAccessService,
    ConnectionProcessors,
    VaultKeyCheck,
  ],
})
export class ConnectionsModule {}
