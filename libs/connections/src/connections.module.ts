import { Module } from '@nestjs/common';
import { ConnectionsMessageController } from './connections.message.controller';

/**
 * connection-service: owns provider connections. Today it answers which connection a dispatch
 * would use; creating connections, OAuth and token refresh come with the connections issue.
 */
@Module({ controllers: [ConnectionsMessageController] })
export class ConnectionsModule {}
