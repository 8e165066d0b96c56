import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiSecurity, ApiTags } from '@nestjs/swagger';
import {
  CreateWebhookDto,
  DeletedWebhookEndpointResponse,
  DeliveryResponse,
  ListQueryDto,
  NoBody,
  UpdateWebhookDto,
  WebhookEndpointResponse,
  WebhookEndpointWithSecretResponse,
} from '@campaign-ops/api-contract';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { MAX_ENDPOINTS_PER_ACCOUNT } from '@campaign-ops/webhook-domain';
import { ApiKeyGuard } from '../http/auth.guards';
import { Caller, ListPage } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { pageOf } from '../http/validation';

const EndpointId = () => ApiParam({ name: 'id', description: 'The webhook endpoint id (`whk_…`).' });
const URL_ERRORS = ['url_invalid', 'url_not_https', 'url_forbidden_host', 'event_unknown'];

@ApiTags('Webhooks')
@ApiSecurity('apiKey')
@Controller('v1/webhooks')
@UseGuards(ApiKeyGuard)
export class WebhooksController {
  constructor(private readonly services: ServiceClient) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createWebhookEndpoint',
    summary: 'Create a webhook endpoint',
    description: `The answer carries the \`signing_secret\`; it is never shown again. An account has at most ${MAX_ENDPOINTS_PER_ACCOUNT} endpoints per mode (deleted ones do not count): past that, 400 \`parameter_invalid\` without a \`param\`.`,
  })
  @ApiAnswer(WebhookEndpointWithSecretResponse, { errors: URL_ERRORS })
  create(@Caller() caller: Caller, @Body() { url, events }: CreateWebhookDto) {
    return this.services.call(SUBJECTS.webhookCreate, { caller, url, events });
  }

  @Get()
  @ApiOperation({ operationId: 'listWebhookEndpoints', summary: 'List webhook endpoints' })
  @ApiAnswer(WebhookEndpointResponse, { list: { query: ListQueryDto } })
  async list(@Caller() caller: Caller, @Query() query: ListQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.webhookList, { caller, query: pageOf(query) });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint' })
  @EndpointId()
  @ApiAnswer(WebhookEndpointResponse)
  get(@Caller() caller: Caller, @Param('id') id: string) {
    return this.services.call(SUBJECTS.webhookGet, { caller, id });
  }

  @Patch(':id')
  @ApiOperation({ operationId: 'updateWebhookEndpoint', summary: 'Update a webhook endpoint' })
  @EndpointId()
  @ApiAnswer(WebhookEndpointResponse, { errors: URL_ERRORS })
  update(@Caller() caller: Caller, @Param('id') id: string, @Body() patch: UpdateWebhookDto) {
    return this.services.call(SUBJECTS.webhookUpdate, { caller, id, ...patch });
  }

  @Delete(':id')
  @ApiOperation({ operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint' })
  @EndpointId()
  @ApiAnswer(DeletedWebhookEndpointResponse)
  remove(@Caller() caller: Caller, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookDelete, { caller, id });
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret',
    description: 'The answer carries the new `signing_secret`; the old one stops at once.',
  })
  @EndpointId()
  @ApiAnswer(WebhookEndpointWithSecretResponse)
  rotateSecret(@Caller() caller: Caller, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookRotateSecret, { caller, id });
  }

  @Get(':id/deliveries')
  @ApiOperation({ operationId: 'listWebhookDeliveries', summary: "List an endpoint's deliveries" })
  @EndpointId()
  @ApiAnswer(DeliveryResponse, { list: { query: ListQueryDto } })
  async deliveries(@Caller() caller: Caller, @Param('id') id: string, @Query() query: ListQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.webhookDeliveries, { caller, id, query: pageOf(query) });
    return new ListPage(result.data, result.hasMore);
  }

  @Post(':id/deliveries/:delivery_id/redeliver')
  @HttpCode(200)
  @ApiOperation({ operationId: 'redeliverWebhook', summary: 'Redeliver an event', description: 'A new delivery of the same event, with the same event `id`.' })
  @EndpointId()
  @ApiParam({ name: 'delivery_id', description: 'The delivery id (`dlv_…`).' })
  @ApiAnswer(DeliveryResponse)
  redeliver(@Caller() caller: Caller, @Param('id') id: string, @Param('delivery_id') deliveryId: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookRedeliver, { caller, id, deliveryId });
  }
}
