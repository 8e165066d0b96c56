import { Inject } from '@nestjs/common';
import { MessageController } from '@campaign-ops/service-runtime';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { READ_STORE, ReadStore } from '@campaign-ops/read-store';
import { ResolveConnectionRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { resolveConnection } from './resolve-connection';

/** What connection-service answers: which connection a dispatch would use. */
@MessageController()
export class ConnectionsMessageController {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  @MessagePattern(SUBJECTS.connectionResolve)
  resolve(@Payload() request: ResolveConnectionRequest) {
    return resolveConnection(this.readStore, request);
  }
}
