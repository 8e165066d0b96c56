import { Body, Controller, Headers, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { CreateCampaignDto } from '@campaign-ops/api-contract';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { DispatchResource } from '@campaign-ops/dispatch-domain';
import { CreateDispatchRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { parseIdempotencyKey } from '../http/validation';

@ApiTags('Campaigns')
@ApiSecurity('apiKey')
@Controller('v1/campaigns')
@UseGuards(ApiKeyGuard)
export class CampaignsController {
  constructor(private readonly services: ServiceClient) {}

  /** A launch: validated here, decided and recorded by dispatch-service, answered `accepted`. */
  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createCampaign',
    summary: 'Launch a campaign',
    description:
      'Validates the campaign and answers the dispatch `accepted`; `dispatch.completed` or `dispatch.failed` follows. ' +
      '1 credit is charged on acceptance (402 `insufficient_credits` below it). A live key needs an `active` connection for the channel; ' +
      'a test key runs on the sandbox simulator (magic names in `campaign.name`: `[sandbox:fail]`, `[sandbox:transient]`, `[sandbox:reauth]`, `[sandbox:slow]`).',
  })
  @ApiAnswer('Dispatch', { errors: ['insufficient_credits', 'connection_required', 'connection_reauth_required', 'channel_live_unavailable'] })
  async create(@Req() request: GatewayRequest, @Body() { channel, campaign }: CreateCampaignDto, @Headers('idempotency-key') idempotencyKey?: string): Promise<DispatchResource> {
    const message: CreateDispatchRequest = { caller: callerOf(request), channel, campaign, idempotencyKey: parseIdempotencyKey(idempotencyKey) };
    return this.services.call<DispatchResource>(SUBJECTS.dispatchCreate, message);
  }
}
