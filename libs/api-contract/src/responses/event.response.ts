import { JSONSchema } from 'class-validator-jsonschema';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '@campaign-ops/webhook-domain';
import { channel, credits, environment } from './common';
import { DispatchErrorResponse } from './dispatch.response';
import { constant, Field, id, JsonSchema, object, RawResponse, ResponseDto, responseSchemaName, schemaRef, text, timestamp } from './schema';

const dispatchEventData = (event: 'accepted' | 'completed' | 'failed'): JsonSchema =>
  object(`\`data\` of \`dispatch.${event}\`.`, {
    dispatch_id: id('dsp', 'The dispatch.'),
    channel,
    status: constant(event),
    resource_type: constant('campaign'),
    action: constant('create'),
    environment,
    credits_charged: credits,
    ...(event === 'completed' ? { provider_resource_id: text('The resource at the provider (`sbx_<channel>_<digits>` in sandbox).') } : {}),
    ...(event === 'failed' ? { error: schemaRef(DispatchErrorResponse) } : {}),
  });

const connectionEventData = (status: 'active' | 'reauth_required'): JsonSchema =>
  object(`\`data\` of \`connection.${status}\`.`, {
    connection_id: id('con', 'The connection.'),
    channel,
    status: constant(status),
    provider_account_id: text('The ad account at the provider.'),
    environment,
    ...(status === 'reauth_required' ? { reason: text('Why re-authentication is needed.') } : {}),
  });

const EVENT_DATA: Record<WebhookEventType, JsonSchema> = {
  'dispatch.accepted': dispatchEventData('accepted'),
  'dispatch.completed': dispatchEventData('completed'),
  'dispatch.failed': dispatchEventData('failed'),
  'connection.active': connectionEventData('active'),
  'connection.reauth_required': connectionEventData('reauth_required'),
};

/** `connection.reauth_required` → `ConnectionReauthRequiredEvent`: the schema of one partner event. */
export const eventSchemaName = (event: WebhookEventType): string =>
  event
    .split(/[._]/)
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join('') + 'Event';

/** The response DTO of one partner event: `{id, event, timestamp, data}` with that event's data. */
function partnerEvent(event: WebhookEventType): ResponseDto {
  class PartnerEventResponse {
    @Field(id('evt', 'The event id: the same on every attempt and redelivery, for receivers to de-duplicate.')) id!: string;
    @Field(constant(event)) event!: string;
    @Field(timestamp('When the event occurred.')) timestamp!: string;
    @Field(EVENT_DATA[event]) data!: Record<string, unknown>;
  }
  Object.defineProperty(PartnerEventResponse, 'name', { value: `${eventSchemaName(event)}Response` });
  JSONSchema({ description: `A \`${event}\` event, as delivered to webhook endpoints and listed by the Events API.` })(PartnerEventResponse);
  return PartnerEventResponse;
}

/** Each partner event's DTO (named `eventSchemaName(event)` in the document). */
export const EVENT_RESPONSES: Record<WebhookEventType, ResponseDto> = Object.fromEntries(
  WEBHOOK_EVENT_TYPES.map((event) => [event, partnerEvent(event)]),
) as Record<WebhookEventType, ResponseDto>;

/** A partner event, any of them. */
@RawResponse({
  description: 'A partner event in the webhook shape `{id, event, timestamp, data}`.',
  oneOf: WEBHOOK_EVENT_TYPES.map((event) => schemaRef(eventSchemaName(event))),
  discriminator: {
    propertyName: 'event',
    mapping: Object.fromEntries(WEBHOOK_EVENT_TYPES.map((event) => [event, `#/components/schemas/${responseSchemaName(EVENT_RESPONSES[event])}`])),
  },
})
export class EventResponse {}
