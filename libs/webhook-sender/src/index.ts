export { MAX_RESPONSE_BYTES, postWebhook, WebhookSender, type WebhookRequest, type WebhookResult } from './post-webhook';
export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from './partner-connections';
export { WebhookSenderThread, type WebhookPoster } from './sender-thread';
