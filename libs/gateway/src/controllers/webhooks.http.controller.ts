import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, UseGuards } from '@nestjs/common';
import { CreateWebhookDto, ListQueryDto, NoBody, UpdateWebhookDto } from '@campaign-ops/api-contract';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest, ListPage } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { pageOf } from '../http/validation';

@Controller('v1/webhooks')
@UseGuards(ApiKeyGuard)
export class WebhooksController {
  constructor(private readonly services: ServiceClient) {}

  @Post()
  @HttpCode(200)
  create(@Req() request: GatewayRequest, @Body() { url, events }: CreateWebhookDto) {
    return this.services.call(SUBJECTS.webhookCreate, { caller: callerOf(request), url, events });
  }

  @Get()
  async list(@Req() request: GatewayRequest, @Query() query: ListQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.webhookList, { caller: callerOf(request), query: pageOf(query) });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  get(@Req() request: GatewayRequest, @Param('id') id: string) {
    return this.services.call(SUBJECTS.webhookGet, { caller: callerOf(request), id });
  }

  @Patch(':id')
  update(@Req() request: GatewayRequest, @Param('id') id: string, @Body() patch: UpdateWebhookDto) {
    return this.services.call(SUBJECTS.webhookUpdate, { caller: callerOf(request), id, ...patch });
  }

  @Delete(':id')
  remove(@Req() request: GatewayRequest, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookDelete, { caller: callerOf(request), id });
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  rotateSecret(@Req() request: GatewayRequest, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookRotateSecret, { caller: callerOf(request), id });
  }

  @Get(':id/deliveries')
  async deliveries(@Req() request: GatewayRequest, @Param('id') id: string, @Query() query: ListQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.webhookDeliveries, { caller: callerOf(request), id, query: pageOf(query) });
    return new ListPage(result.data, result.hasMore);
  }

  @Post(':id/deliveries/:delivery_id/redeliver')
  @HttpCode(200)
  redeliver(@Req() request: GatewayRequest, @Param('id') id: string, @Param('delivery_id') deliveryId: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.webhookRedeliver, { caller: callerOf(request), id, deliveryId });
  }
}
