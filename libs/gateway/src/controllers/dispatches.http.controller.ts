import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import { ListDispatchesQueryDto, NoBody } from '@campaign-ops/api-contract';
import { DispatchResource } from '@campaign-ops/dispatch-domain';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest, ListPage } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { pageOf } from '../http/validation';

@Controller('v1/dispatches')
@UseGuards(ApiKeyGuard)
export class DispatchesController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  async list(@Req() request: GatewayRequest, @Query() query: ListDispatchesQueryDto): Promise<ListPage<DispatchResource>> {
    const result = await this.services.call<ListResult<DispatchResource>>(SUBJECTS.dispatchList, {
      caller: callerOf(request),
      query: { ...pageOf(query), status: query.status, channel: query.channel },
    });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  get(@Req() request: GatewayRequest, @Param('id') id: string): Promise<DispatchResource> {
    return this.services.call(SUBJECTS.dispatchGet, { caller: callerOf(request), id });
  }

  @Post(':id/retry')
  @HttpCode(200)
  retry(@Req() request: GatewayRequest, @Param('id') id: string, @Body() _body: NoBody): Promise<DispatchResource> {
    return this.services.call(SUBJECTS.dispatchRetry, { caller: callerOf(request), id });
  }

  @Get(':id/events')
  async events(@Req() request: GatewayRequest, @Param('id') id: string): Promise<ListPage<unknown>> {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.dispatchEvents, { caller: callerOf(request), id });
    return new ListPage(result.data, result.hasMore);
  }
}
