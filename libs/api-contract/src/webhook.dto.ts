import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, isString, IsString, MaxLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { isWebhookEventType, WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { eachItem, Omittable } from './rules';

// The URL's scheme, host and SSRF rules are checked by the webhook service, which owns them.
const URL_DOC = { format: 'uri', description: 'HTTPS URL that receives event POSTs.', examples: ['https://partner.example/hooks'] };
const EVENTS_DOC = { description: `Events to receive: ${WEBHOOK_EVENT_TYPES.join(', ')}.`, examples: [['dispatch.completed']] };
const MAX_EVENTS = WEBHOOK_EVENT_TYPES.length * 4;

/** POST /v1/webhooks. */
export class CreateWebhookDto {
  @JSONSchema(URL_DOC)
  @IsString()
  @MaxLength(2048)
  url!: string;

  @JSONSchema(EVENTS_DOC)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_EVENTS)
  @IsString(eachItem(isString))
  @IsIn(WEBHOOK_EVENT_TYPES, eachItem(isWebhookEventType, 'event_unknown'))
  events!: string[];
}

/** PATCH /v1/webhooks/:id: any of the fields. */
export class UpdateWebhookDto {
  @JSONSchema(URL_DOC)
  @Omittable()
  @IsString()
  @MaxLength(2048)
  url?: string;

  @JSONSchema(EVENTS_DOC)
  @Omittable()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_EVENTS)
  @IsString(eachItem(isString))
  @IsIn(WEBHOOK_EVENT_TYPES, eachItem(isWebhookEventType, 'event_unknown'))
  events?: string[];

  @Omittable()
  @IsBoolean()
  enabled?: boolean;
}
