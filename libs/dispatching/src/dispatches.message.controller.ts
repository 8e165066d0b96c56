import { LocalServices, MessageController } from '@campaign-ops/service-runtime';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { CreateDispatchRequest, DispatchByIdRequest, ListDispatchesRequest, SUBJECTS, ValidateCampaignRequest } from '@campaign-ops/service-messages';
import { CampaignChecks } from './campaign-checks';
import { DispatchCommands } from './dispatch-commands';
import { DispatchQueries } from './dispatch-queries';

/** What dispatch-service answers about dispatches (the gateway asks over the bus). */
@MessageController()
export class DispatchesMessageController {
  constructor(
    private readonly commands: DispatchCommands,
    private readonly queries: DispatchQueries,
    private readonly checks: CampaignChecks,
    local: LocalServices,
  ) {
    // Every launch: in a process that also holds the gateway (standalone) a function call.
    local.serve(SUBJECTS.dispatchCreate, (request: CreateDispatchRequest) => this.create(request));
  }

  @MessagePattern(SUBJECTS.dispatchValidate)
  validate(@Payload() request: ValidateCampaignRequest) {
    return this.checks.validate(request);
  }

  @MessagePattern(SUBJECTS.dispatchCreate)
  create(@Payload() request: CreateDispatchRequest) {
    return this.commands.create(request);
  }

  @MessagePattern(SUBJECTS.dispatchRetry)
  retry(@Payload() request: DispatchByIdRequest) {
    return this.commands.retry(request);
  }

  @MessagePattern(SUBJECTS.dispatchGet)
  get(@Payload() request: DispatchByIdRequest) {
    return this.queries.get(request);
  }

  @MessagePattern(SUBJECTS.dispatchList)
  list(@Payload() request: ListDispatchesRequest) {
    return this.queries.list(request);
  }

  @MessagePattern(SUBJECTS.dispatchEvents)
  history(@Payload() request: DispatchByIdRequest) {
    return this.queries.history(request);
  }
}
