import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { DispatchEventResponse, DispatchResponse, ListDispatchesQueryDto, NoBody } from '@campaign-ops/api-contract';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { DispatchResource } from '@campaign-ops/dispatch-domain';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { Caller, ListPage } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { pageOf } from '../http/validation';

const DispatchId = () => ApiParam({ name: 'id', description: 'The dispatch id (`dsp_…`).' });

@ApiTags('Dispatches')
@ApiSecurity('apiKey')
@Controller('v1/dispatches')
@UseGuards(ApiKeyGuard)
export class DispatchesController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ operationId: 'listDispatches', summary: 'List dispatches', description: 'Newest first.' })
  @ApiAnswer(DispatchResponse, { list: { query: ListDispatchesQueryDto } })
  async list(@Caller() caller: Caller, @Query() query: ListDispatchesQueryDto): Promise<ListPage<DispatchResource>> {
    const result = await this.services.call<ListResult<DispatchResource>>(SUBJECTS.dispatchList, {
      caller,
      query: { ...pageOf(query), status: query.status, channel: query.channel },
    });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getDispatch', summary: 'Get a dispatch', description: 'Read-your-writes: found right after the launch.' })
  @DispatchId()
  @ApiAnswer(DispatchResponse)
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<DispatchResource> {
    return this.services.call(SUBJECTS.dispatchGet, { caller, id });
  }

  @Post(':id/retry')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'retryDispatch',
    summary: 'Retry a failed dispatch',
    description: 'Only from `failed`; the dispatch is `accepted` again and is not charged again.',
  })
  @DispatchId()
  @ApiAnswer(DispatchResponse, { errors: ['dispatch_not_retryable', 'connection_required', 'connection_reauth_required', 'channel_live_unavailable'] })
  retry(@Caller() caller: Caller, @Param('id') id: string, @Body() _body: NoBody): Promise<DispatchResource> {
    return this.services.call(SUBJECTS.dispatchRetry, { caller, id });
  }

  @Get(':id/events')
  @ApiOperation({
    operationId: 'listDispatchEvents',
    summary: "A dispatch's audit trail",
    description: 'Its whole history from the event store, oldest first.',
  })
  @DispatchId()
  @ApiAnswer(DispatchEventResponse, { list: { paginated: false } })
  async events(@Caller() caller: Caller, @Param('id') id: string): Promise<ListPage<unknown>> {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.dispatchEvents, { caller, id });
    return new ListPage(result.data, result.hasMore);
  }
}
