import { JSONSchema } from 'class-validator-jsonschema';
import { WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { constant, Field, id, integer, oneOf, orNull, text, timestamp } from './schema';

@JSONSchema({ description: 'A webhook endpoint (docs/api.md, "Webhooks and signatures"), without its signing secret.' })
export class WebhookEndpointResponse {
  @Field(id('whk', 'The endpoint id.')) id!: string;
  @Field(text('HTTPS URL that receives event POSTs.', { format: 'uri', examples: ['https://partner.example/hooks'] })) url!: string;
  @Field({ type: 'array', description: 'The events subscribed to.', items: oneOf(WEBHOOK_EVENT_TYPES, 'An event name.') }) events!: string[];
  @Field({ type: 'boolean', description: 'False once every delivery has failed for 5 days, or when turned off with PATCH.' }) enabled!: boolean;
  @Field(orNull(text('Why the endpoint was disabled.'))) disabled_reason!: string | null;
  @Field(timestamp('When the endpoint was created.')) created_at!: string;
}

@JSONSchema({ description: 'A webhook endpoint with its signing secret: only in the answers to create and rotate-secret.' })
export class WebhookEndpointWithSecretResponse extends WebhookEndpointResponse {
  @Field(text('HMAC-SHA256 key of `X-SERVICE-Signature`. Shown only here; store it.', { pattern: '^whsec_[0-9A-Za-z]+$' })) signing_secret!: string;
}

@JSONSchema({ description: 'A deleted webhook endpoint.' })
export class DeletedWebhookEndpointResponse {
  @Field(id('whk', 'The endpoint id.')) id!: string;
  @Field(constant(true)) deleted!: true;
}

@JSONSchema({ description: 'One event on its way to one endpoint, with its attempts.' })
export class DeliveryResponse {
  @Field(id('dlv', 'The delivery id.')) id!: string;
  @Field(id('evt', 'The event delivered.')) event_id!: string;
  @Field(oneOf(WEBHOOK_EVENT_TYPES, 'Its name.')) event!: string;
  @Field(oneOf(['pending', 'succeeded', 'failed'], '`failed` once every attempt of WEBHOOK_RETRY_SCHEDULE has failed.')) status!: string;
  @Field(integer('Attempts made.', { minimum: 0 })) attempts!: number;
  @Field(orNull(integer('The HTTP status of the last attempt; null when it got none.'))) last_status_code!: number | null;
  @Field(orNull(text('What went wrong on the last attempt.'))) last_error!: string | null;
  @Field(orNull(timestamp('When the next attempt is due; null when none is.'))) next_attempt_at!: string | null;
  @Field(timestamp('When the delivery was created.')) created_at!: string;
}
