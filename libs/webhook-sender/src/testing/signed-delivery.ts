import { newId } from '@campaign-ops/ids';
import { signBody } from '@campaign-ops/webhook-signing';

export const TEST_USER_AGENT = 'campaign-ops-webhooks/0.0.0-test';

export type SignedDeliveryOptions = {
  event?: string;
  data?: Record<string, unknown>;
  /** Replaces the serialised envelope, e.g. to send something that is not JSON. */
  rawBody?: string;
  /** Overrides individual headers; `undefined` removes one. */
  headers?: Record<string, string | undefined>;
};

/**
 * A delivery as the contract describes it (envelope, signature and headers), for tests of the
 * sender and the fake partner. Overrides let a test break exactly one thing.
 */
export function signedDelivery(secret: string, options: SignedDeliveryOptions = {}): { body: string; headers: Record<string, string> } {
  const id = newId('evt');
  const event = options.event ?? 'dispatch.succeeded';
  const data = options.data ?? { dispatch_id: newId('dsp') };
  const body = options.rawBody ?? JSON.stringify({ id, event, timestamp: new Date().toISOString(), data });
  const headers: Record<string, string | undefined> = {
    'Content-Type': 'application/json',
    'User-Agent': TEST_USER_AGENT,
    'X-SERVICE-Signature': signBody(secret, body),
    'X-SERVICE-Timestamp': String(Math.floor(Date.now() / 1000)),
    'X-SERVICE-Event': event,
    'X-SERVICE-Event-Id': id,
    'X-SERVICE-Delivery-Id': newId('dlv'),
    ...options.headers,
  };
  const present = Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined);
  return { body, headers: Object.fromEntries(present) };
}
