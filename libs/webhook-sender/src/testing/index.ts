// Test helpers. Kept out of the library's main entry point so production code never loads them
// (nor their dev dependency, selfsigned); import them from this folder in tests.
export { createTestCertificates, type TestCertificates } from './test-ca';
export {
  startPartnerReceiver,
  type AcceptedWebhook,
  type PartnerReceiver,
  type PartnerReceiverOptions,
  type ReceivedRequest,
  type WebhookEnvelope,
} from './partner-receiver';
