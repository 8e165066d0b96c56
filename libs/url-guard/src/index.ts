export type { UrlPolicy } from './policy';
export { isForbiddenAddress } from './forbidden-address';
export { MAX_WEBHOOK_URL_LENGTH, checkWebhookUrl, precheckWebhookUrl, type ResolveHost, type UrlCheckCode, type UrlCheckResult } from './webhook-url';
export { FORBIDDEN_HOST_ERROR_CODE, guardedLookup } from './guarded-lookup';
