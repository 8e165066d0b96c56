import { Body, Controller, Headers, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import { CreateCampaignDto } from '@campaign-ops/api-contract';
import { DispatchResource } from '@campaign-ops/dispatch-domain';
import { CreateDispatchRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { parseIdempotencyKey } from '../http/validation';

@Controller('v1/campaigns')
@UseGuards(ApiKeyGuard)
export class CampaignsController {
  constructor(private readonly services: ServiceClient) {}

  /** A launch: validated here, decided and recorded by dispatch-service, answered `accepted`. */
  @Post()
  @HttpCode(200)
  async create(@Req() request: GatewayRequest, @Body() { channel, campaign }: CreateCampaignDto, @Headers('idempotency-key') idempotencyKey?: string): Promise<DispatchResource> {
    const message: CreateDispatchRequest = { caller: callerOf(request), channel, campaign, idempotencyKey: parseIdempotencyKey(idempotencyKey) };
    return this.services.call<DispatchResource>(SUBJECTS.dispatchCreate, message);
  }
}
