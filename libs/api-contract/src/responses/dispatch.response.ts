import { JSONSchema } from 'class-validator-jsonschema';
import { DISPATCH_EVENT_TYPES } from '@campaign-ops/dispatch-domain';
import { channel, environment } from './common';
import { constant, Field, id, integer, oneOf, orNull, schemaRef, text, timestamp } from './schema';

@JSONSchema({ description: 'Why a dispatch failed.' })
export class DispatchErrorResponse {
  @Field(oneOf(['provider_validation_failed', 'connection_reauth_required', 'provider_unavailable'], 'What went wrong.'))
  code!: string;
  @Field(text('In words; for a provider validation error, the provider’s own message.'))
  message!: string;
  @Field(orNull(text("The provider's error code, when it gave one.")))
  provider_code!: string | null;
  @Field({ type: 'boolean', description: 'Whether POST /v1/dispatches/{id}/retry may succeed without changing anything.' })
  retryable!: boolean;
}

@JSONSchema({
  description: 'A campaign launch as an operational record: what was asked, charged and done at the network (docs/api.md, "Dispatches and retries").',
})
export class DispatchResponse {
  @Field(id('dsp', 'The dispatch id.')) id!: string;
  @Field(oneOf(['accepted', 'completed', 'failed'], '`accepted → completed`, `accepted → failed`, `failed → accepted` (retry).')) status!: string;
  @Field(channel) channel!: string;
  @Field(constant('campaign')) resource_type!: 'campaign';
  @Field(constant('create')) action!: 'create';
  @Field(environment) environment!: string;
  @Field(integer('Credits charged; 1 for a campaign creation, not charged again on retry.', { minimum: 0 })) credits_charged!: number;
  @Field({ $ref: '#/components/schemas/CampaignDto', description: "The request's campaign object." }) campaign!: unknown;
  @Field(orNull(id('con', 'The connection used; null in sandbox without one.'))) connection_id!: string | null;
  @Field(orNull(text('The resource at the provider; null until completed.', { examples: ['sbx_meta_ads_4821937465'] }))) provider_resource_id!: string | null;
  @Field({ oneOf: [schemaRef(DispatchErrorResponse), { type: 'null' }], description: 'Why it failed; null unless failed.' })
  error!: DispatchErrorResponse | null;
  @Field(integer('Provider calls over the whole life of the dispatch.', { minimum: 0 })) attempts!: number;
  @Field(orNull(text('The Idempotency-Key the launch was sent with.'))) idempotency_key!: string | null;
  @Field(timestamp('When it was accepted first.')) created_at!: string;
  @Field(timestamp('Its last change.')) updated_at!: string;
  @Field(orNull(timestamp('When it completed.'))) completed_at!: string | null;
  @Field(orNull(timestamp('When it last failed.'))) failed_at!: string | null;
}

@JSONSchema({ description: 'The answer of a dry run (POST /v1/campaigns/validate): the campaign would be accepted as it is.' })
export class CampaignValidationResponse {
  @Field(constant(true)) valid!: true;
  @Field(channel) channel!: string;
  @Field(
    oneOf(
      ['provider', 'rules', 'sandbox'],
      '`provider`: the ad network’s own validate-only call; `rules`: the channel’s rules this service knows (the network has no such call); `sandbox`: the simulator (test keys).',
    ),
  )
  checked_by!: string;
  @Field({ type: 'array', items: { type: 'string' }, description: 'Remarks that do not refuse the campaign.' }) warnings!: string[];
}

@JSONSchema({ description: "One entry of a dispatch's audit trail, read from its event stream." })
export class DispatchEventResponse {
  @Field(id('evt', 'The event id.')) id!: string;
  @Field(oneOf(DISPATCH_EVENT_TYPES, 'The domain event.')) type!: string;
  @Field(integer('Its position in the stream, from 0.', { minimum: 0 })) revision!: number;
  @Field({ type: 'object', description: 'The domain event as recorded.' }) data!: Record<string, unknown>;
  @Field(timestamp('When it was recorded.')) occurred_at!: string;
}
