import { MessageController } from '@campaign-ops/service-runtime';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  CreateWebhookRequest,
  ListDeliveriesRequest,
  ListWebhooksRequest,
  RedeliverRequest,
  SUBJECTS,
  UpdateWebhookRequest,
  WebhookByIdRequest,
} from '@campaign-ops/service-messages';
import { DeliveryQueries } from './delivery-queries';
import { EndpointCommands } from './endpoint-commands';

/** Webhook endpoints and their delivery logs, as the gateway asks for them. */
@MessageController()
export class WebhooksMessageController {
  constructor(
    private readonly endpoints: EndpointCommands,
    private readonly deliveries: DeliveryQueries,
  ) {}

  @MessagePattern(SUBJECTS.webhookCreate)
  create(@Payload() request: CreateWebhookRequest) {
    return this.endpoints.create(request);
  }

  @MessagePattern(SUBJECTS.webhookList)
  list(@Payload() request: ListWebhooksRequest) {
    return this.endpoints.list(request);
  }

  @MessagePattern(SUBJECTS.webhookGet)
  get(@Payload() request: WebhookByIdRequest) {
    return this.endpoints.get(request);
  }

  @MessagePattern(SUBJECTS.webhookUpdate)
  update(@Payload() request: UpdateWebhookRequest) {
    return this.endpoints.update(request);
  }

  @MessagePattern(SUBJECTS.webhookDelete)
  delete(@Payload() request: WebhookByIdRequest) {
    return this.endpoints.delete(request);
  }

  @MessagePattern(SUBJECTS.webhookRotateSecret)
  rotateSecret(@Payload() request: WebhookByIdRequest) {
    return this.endpoints.rotateSecret(request);
  }

  @MessagePattern(SUBJECTS.webhookDeliveries)
  listDeliveries(@Payload() request: ListDeliveriesRequest) {
    return this.deliveries.list(request);
  }

  @MessagePattern(SUBJECTS.webhookRedeliver)
  redeliver(@Payload() request: RedeliverRequest) {
    return this.deliveries.redeliver(request);
  }
}
