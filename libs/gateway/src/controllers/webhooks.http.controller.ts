import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { CreateWebhookDto, DeletedWebhookEndpointResponse, DeliveryResponse, ListQueryDto, NoBody, UpdateWebhookDto, WebhookEndpointResponse, WebhookEndpointWithSecretResponse } from '@campaign-ops/api-contract';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest, ListPage } from '../http/request-context';
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
  @ApiOperation({ operationId: 'createWebhookEndpoint', summary: 'Create a webhook endpoint', description: 'The answer carries the `signing_secret`; it is never shown again.' })
  @ApiAnswer(WebhookEndpointWithSecretResponse, { errors: URL_ERRORS })
  create(@Req() request: GatewayRequest, @Body() { url, events }: CreateWebhookDto) {
    return this.services.call(SUBJECTS.webhookCreate, { caller: callerOf(request), url, events });
  }

  @Get()
  @ApiOperation({ operationId: 'listWebhookEndpoints', summary: 'List webhook endpoints' })
  @ApiAnswer(WebhookEndpointResponse, { list: { query: ListQueryDto } })
  async list(@Req() request: GatewayRequest, @Query() query: ListQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.webhookList, { caller: callerOf(request), query: pageOf(query) });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint' })
  @EndpointId()
  @ApiAnswer(WebhookEndpointResponse)
  get(@Req() request: GatewayRequest, @Param('id') id: string) {
    return this.services.call(SUBJECTS.webhookGet, { caller: callerOf(request), id });
  }

  @Patch(':id')
  @ApiOperation({ operationId: 'updateWebhookEndpoint', summary: 'Update a webhook endpoint' })
  @EndpointId()
  @ApiAnswer(WebhookEndpointResponse, { errors: URL_ERRORS })
  update(@Req() request: GatewayRequest, @Param('id') id: string, @Body() patch: UpdateWebhookDto) {
    return this.services.call(SUBJECTS.webhookUpdate, { caller: callerOf(request), id, ...patch });
  }

  @Delete(':id')
  @ApiOperation({ operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint' })
  @EndpointId()
  @ApiAnswer(DeletedWebhookEndpointResponse)
  remove(@Req() request: GatewayRequest, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookDelete, { caller: callerOf(request), id });
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({ operationId: 'rotateWebhookSecret', summary: 'Rotate the signing secret', description: 'The answer carries the new `signing_secret`; the old one stops at once.' })
  @EndpointId()
  @ApiAnswer(WebhookEndpointWithSecretResponse)
  rotateSecret(@Req() request: GatewayRequest, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookRotateSecret, { caller: callerOf(request), id });
  }

  @Get(':id/deliveries')
  @ApiOperation({ operationId: 'listWebhookDeliveries', summary: "List an endpoint's deliveries" })
  @EndpointId()
  @ApiAnswer(DeliveryResponse, { list: { query: ListQueryDto } })
  async deliveries(@Req() request: GatewayRequest, @Param('id') id: string, @Query() query: ListQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.webhookDeliveries, { caller: callerOf(request), id, query: pageOf(query) });
    return new ListPage(result.data, result.hasMore);
  }

  @Post(':id/deliveries/:delivery_id/redeliver')
  @HttpCode(200)
  @ApiOperation({ operationId: 'redeliverWebhook', summary: 'Redeliver an event', description: 'A new delivery of the same event, with the same event `id`.' })
  @EndpointId()
  @ApiParam({ name: 'delivery_id', description: 'The delivery id (`dlv_…`).' })
  @ApiAnswer(DeliveryResponse)
  redeliver(@Req() request: GatewayRequest, @Param('id') id: string, @Param('delivery_id') deliveryId: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookRedeliver, { caller: callerOf(request), id, deliveryId });
  }
}
