import { Controller, Get, Param, Query, Req, UseGuards } from '@nestjs/common';
import { ApiError } from '@campaign-ops/api-errors';
import { WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { ListResult, SUBJECTS } from '@campaign-ops/service-messages';
import { checkUtcTimestamp } from '@campaign-ops/api-contract';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest, ListPage } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { parseListQuery } from '../http/validation';

/** The Events API (API.md §6): the account's events of the last 30 days, in the webhook shape. */
@Controller('v1/events')
@UseGuards(ApiKeyGuard)
export class EventsController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  async list(@Req() request: GatewayRequest, @Query() query: Record<string, unknown>) {
    const { limit, startingAfter, type, created_after: createdAfter } = parseListQuery(query, { type: WEBHOOK_EVENT_TYPES, created_after: 'any' });
    if (typeof createdAfter === 'string' && checkUtcTimestamp(createdAfter)) {
      throw new ApiError('parameter_invalid', 'created_after must be an ISO 8601 UTC timestamp ending in Z, such as 2026-12-01T09:00:00Z.', 'created_after');
    }
    const normalized = typeof createdAfter === 'string' ? new Date(createdAfter).toISOString() : undefined;
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.eventsList, {
      caller: callerOf(request),
      query: { limit, startingAfter, type: type as string | undefined, createdAfter: normalized },
    });
    return new ListPage(result.data, result.hasMore);
  }

  @Get(':id')
  get(@Req() request: GatewayRequest, @Param('id') id: string) {
    return this.services.call(SUBJECTS.eventsGet, { caller: callerOf(request), id });
  }
}
