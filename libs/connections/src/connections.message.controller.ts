import { MessagePattern, Payload } from '@nestjs/microservices';
import { LocalServices, MessageController } from '@campaign-ops/service-runtime';
import {
  ConnectionAccessRequest,
  ConnectionByIdRequest,
  ConnectionReauthRequiredRequest,
  CreateConnectionRequest,
  ListConnectionsRequest,
  OAuthCallbackRequest,
  ReauthorizeConnectionRequest,
  ResolveConnectionRequest,
  SUBJECTS,
} from '@campaign-ops/service-messages';
import { ConnectionAccessService } from './connection-access';
import { ConnectionCommands } from './connection-commands';
import { ConnectionQueries } from './connection-queries';
import { OAuthRounds } from './oauth-rounds';

/** What connection-service answers: the gateway's connection calls, and dispatch-service's token and reauth requests. */
@MessageController()
export class ConnectionsMessageController {
  constructor(
    private readonly commands: ConnectionCommands,
    private readonly queries: ConnectionQueries,
    private readonly rounds: OAuthRounds,
    private readonly tokens: ConnectionAccessService,
    local: LocalServices,
  ) {
    // Every launch asks it: in a process that also holds dispatch-service (standalone) a function call.
    local.serve(SUBJECTS.connectionResolve, (request: ResolveConnectionRequest) => this.resolve(request));
  }

  @MessagePattern(SUBJECTS.connectionCreate)
  create(@Payload() request: CreateConnectionRequest) {
    return this.commands.create(request);
  }

  @MessagePattern(SUBJECTS.connectionList)
  list(@Payload() request: ListConnectionsRequest) {
    return this.queries.list(request);
  }

  @MessagePattern(SUBJECTS.connectionGet)
  get(@Payload() request: ConnectionByIdRequest) {
    return this.queries.get(request);
  }

  @MessagePattern(SUBJECTS.connectionDelete)
  remove(@Payload() request: ConnectionByIdRequest) {
    return this.commands.remove(request);
  }

  @MessagePattern(SUBJECTS.connectionReauthorize)
  reauthorize(@Payload() request: ReauthorizeConnectionRequest) {
    return this.commands.reauthorize(request);
  }

  @MessagePattern(SUBJECTS.connectionOAuthCallback)
  oauthCallback(@Payload() request: OAuthCallbackRequest) {
    return this.rounds.complete(request);
  }

  @MessagePattern(SUBJECTS.connectionAccess)
  access(@Payload() request: ConnectionAccessRequest) {
    return this.tokens.access(request);
  }

  @MessagePattern(SUBJECTS.connectionReauthRequired)
  reauthRequired(@Payload() request: ConnectionReauthRequiredRequest) {
    return this.tokens.reauthRequired(request);
  }

  @MessagePattern(SUBJECTS.connectionResolve)
  resolve(@Payload() request: ResolveConnectionRequest) {
    return this.queries.resolve(request);
  }
}
