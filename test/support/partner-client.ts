import { assertAnswerMatchesDocument } from './openapi-answers';

/**
 * A partner calling the HTTP API, as their test suite would: fetch, JSON, headers. Every answer,
 * garbage requests' included, is checked against the server's /openapi.json (test/support/openapi-answers.ts):
 * a status the operation does not declare, or a body its schema refuses, fails the call.
 */
export interface ApiAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export class PartnerClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  as(token: string): PartnerClient {
    return new PartnerClient(this.baseUrl, token);
  }

  async call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer<T>> {
    const response = await fetch(this.baseUrl + path, {
      method,
      headers: {
        ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    await assertAnswerMatchesDocument(this.baseUrl, method, path, response.status, response.headers.get('content-type'), parsed);
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  get = <T = any>(path: string, headers?: Record<string, string>) => this.call<T>('GET', path, undefined, headers);
  post = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => this.call<T>('POST', path, body, headers);
  patch = <T = any>(path: string, body?: unknown) => this.call<T>('PATCH', path, body);
  delete = <T = any>(path: string) => this.call<T>('DELETE', path);
}

export const sandboxCampaign = (name = 'Spring sale') => ({
  channel: 'meta_ads',
  campaign: {
    name,
    objective: 'conversion',
    budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
    schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
  },
});

/** Where partners' OAuth rounds send people back in the tests (registered on every account opened here). */
export const PARTNER_REDIRECT_URI = 'https://partner.example/connected';

/** An account with a key of each mode, through the Admin API; it registers PARTNER_REDIRECT_URI for its OAuth rounds. */
export async function openAccountWithKeys(
  admin: PartnerClient,
  name = 'Partner',
): Promise<{ accountId: string; testKey: string; liveKey: string; testKeyId: string }> {
  const account = await admin.post('/admin/v1/accounts', { name, oauth_redirect_uris: [PARTNER_REDIRECT_URI] });
  if (account.status !== 200) throw new Error(`opening an account answered ${account.status}: ${JSON.stringify(account.body)}`);
  const accountId = account.body.data.id;
  const test = await admin.post(`/admin/v1/accounts/${accountId}/keys`, { mode: 'test' });
  const live = await admin.post(`/admin/v1/accounts/${accountId}/keys`, { mode: 'live' });
  return { accountId, testKey: test.body.data.key, liveKey: live.body.data.key, testKeyId: test.body.data.id };
}

export async function eventually<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}
