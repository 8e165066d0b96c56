export { MAX_RESPONSE_BYTES, postWebhook, type WebhookRequest, type WebhookResult } from './post-webhook';
