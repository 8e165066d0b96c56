import { Body, Controller, Headers, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { CampaignValidationResponse, CreateCampaignDto, DispatchResponse } from '@campaign-ops/api-contract';
import { ApiAnswer, CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { DispatchResource } from '@campaign-ops/dispatch-domain';
import { CampaignValidation, CreateDispatchRequest, SUBJECTS, ValidateCampaignRequest } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { IgnoresIdempotencyKey } from '../http/idempotency.interceptor';
import { Caller } from '../http/request-context';
import { CallOptions, ServiceClient } from '../http/service-client';
import { parseIdempotencyKey } from '../http/validation';

/** A launch, validated: decided and recorded by dispatch-service, which answers the dispatch `accepted` (this route's, and LaunchRoute's). */
export function launch(
  services: ServiceClient,
  caller: Caller,
  { channel, campaign }: CreateCampaignDto,
  idempotencyKey: string | undefined,
): Promise<DispatchResource> {
  const message: CreateDispatchRequest = { caller, channel, campaign, idempotencyKey: parseIdempotencyKey(idempotencyKey) };
  return services.call<DispatchResource>(SUBJECTS.dispatchCreate, message);
}

@ApiTags('Campaigns')
@ApiSecurity('apiKey')
@Controller('v1/campaigns')
@UseGuards(ApiKeyGuard)
export class CampaignsController {
  /** The dry run calls the ad network: it may take what a network call takes. */
  private readonly reachesNetwork: CallOptions;

  constructor(
    private readonly services: ServiceClient,
    @Inject(CONFIG) config: ServiceConfig,
  ) {
    this.reachesNetwork = { timeoutMs: config.connectionRequestTimeoutMs };
  }

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
  @ApiAnswer(DispatchResponse, { errors: ['insufficient_credits', 'connection_required', 'connection_reauth_required', 'channel_live_unavailable'] })
  async create(
    @Caller() caller: Caller,
    @Body() { channel, campaign }: CreateCampaignDto,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<DispatchResource> {
    return launch(this.services, caller, { channel, campaign }, idempotencyKey);
  }

  /** The dry run: checked as a launch would be, by the network where it has a validate-only call; nothing made, charged or sent. */
  @Post('validate')
  @HttpCode(200)
  @IgnoresIdempotencyKey()
  @ApiOperation({
    operationId: 'validateCampaign',
    summary: 'Check a launch without making it (dry run)',
    description:
      'The same body as a launch. Nothing is created, charged, stored or sent as an event. A live key needs an `active` connection as for a launch; ' +
      'the campaign is checked by the ad network itself where it has a validate-only call (`checked_by: "provider"`: Google Ads `validateOnly`, ' +
      'Meta `execution_options: ["validate_only"]`), elsewhere by the channel rules the service knows (`"rules"`); a test key by the sandbox (`"sandbox"`). ' +
      'A refusal is 422 `provider_validation_failed` with the network’s message and `provider_code`. `Idempotency-Key` is accepted and ignored.',
  })
  @ApiAnswer(CampaignValidationResponse, {
    errors: ['provider_validation_failed', 'connection_required', 'connection_reauth_required', 'channel_live_unavailable', 'provider_unavailable'],
  })
  validate(@Caller() caller: Caller, @Body() { channel, campaign }: CreateCampaignDto): Promise<CampaignValidation> {
    const message: ValidateCampaignRequest = { caller, channel, campaign };
    return this.services.call<CampaignValidation>(SUBJECTS.dispatchValidate, message, this.reachesNetwork);
  }
}
