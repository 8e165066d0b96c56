import { isWebhookEventType, WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { s } from '@campaign-ops/request-validation';

const eventName = s.string({
  description: `One of ${WEBHOOK_EVENT_TYPES.join(', ')}.`,
  check: (v) => (isWebhookEventType(v) ? null : { code: 'event_unknown', message: `${v} is not an event; events are ${WEBHOOK_EVENT_TYPES.join(', ')}` }),
});

// The URL is checked by the webhook service (scheme, host, SSRF), which owns those rules.
const url = s.string({ maxLength: 2048, format: 'uri', description: 'HTTPS URL that receives event POSTs.', example: 'https://partner.example/hooks' });
const events = s.array(eventName, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length * 4, example: ['dispatch.completed'] });

export const createWebhookSchema = s.object({ url, events }, { required: ['url', 'events'] });
export const updateWebhookSchema = s.object({ url, events, enabled: s.boolean() }, { required: [] });
