import { Controller, Get, Param, Query, UseGuards } from '@nestjs/common';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiOperation, ApiParam, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { EventResponse, ListEventsQueryDto } from '@campaign-ops/api-contract';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { ApiKeyGuard } from '../http/auth.guards';
import { Caller, ListPage } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { pageOf } from '../http/validation';

/** The Events API (docs/api.md#events-api): the account's events of the last 30 days, in the webhook shape. */
@ApiTags('Events')
@ApiSecurity('apiKey')
@Controller('v1/events')
@UseGuards(ApiKeyGuard)
export class EventsController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({
    operationId: 'listEvents',
    summary: 'List events',
    description: "The account's events of the last 30 days in the webhook shape, newest first, to catch up on what an endpoint missed.",
  })
  @ApiAnswer(EventResponse, { list: { query: ListEventsQueryDto } })
  async list(@Caller() caller: Caller, @Query() query: ListEventsQueryDto) {
    const createdAfter = query.created_after === undefined ? undefined : new Date(query.created_after).toISOString();
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.eventsList, {
      caller,
      query: { ...pageOf(query), type: query.type, createdAfter },
    });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getEvent', summary: 'Get an event' })
  @ApiParam({ name: 'id', description: 'The event id (`evt_…`).' })
  @ApiAnswer(EventResponse)
  get(@Caller() caller: Caller, @Param('id') id: string) {
    return this.services.call(SUBJECTS.eventsGet, { caller, id });
  }
}
