import { Channel } from './channel-catalog';

/** The unified campaign a partner sends (docs/api.md#dispatches-and-retries). */
export interface CampaignSpec {
  name: string;
  objective: string;
  budget: { amount_micros: number; currency: string; type: 'daily' | 'lifetime' };
  schedule: { start_at: string; timezone: string; end_at?: string };
}

export interface CreateCampaignRequest {
  dispatchId: string;
  channel: Channel;
  campaign: CampaignSpec;
  /** 1-based number of this provider call within the dispatch. */
  attempt: number;
}

export interface CreatedCampaign {
  providerResourceId: string;
}

/**
 * How a provider refused: `transient` and `rate_limited` are retried inside the dispatch (after
 * `retryAfterMs` when the network names its delay), `auth` needs the token refreshed or the
 * connection re-authorised, `validation` is final until the campaign changes, and
 * `account_unreachable` means the token works but not for this ad account.
 */
export type ProviderErrorKind = 'transient' | 'rate_limited' | 'auth' | 'validation' | 'account_unreachable';

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly providerCode: string | null,
    readonly httpStatus: number | null = null,
    /** The network's own delay before a retry (Retry-After, retry_delay, a documented wait). */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** One ad network, live or simulated. */
export interface ChannelProvider {
  createCampaign(request: CreateCampaignRequest): Promise<CreatedCampaign>;
  /** The dry run: the rules a create would meet, applied without creating anything; a refusal throws `validation`. */
  validateCampaign(request: Pick<CreateCampaignRequest, 'channel' | 'campaign'>): Promise<{ warnings: string[] }>;
  /**
   * Whether a create answers without waiting on anything (a simulator that knows it will): such
   * work may run where it is handed, and anything else goes where waiting is provided for (the
   * executor's durable consumer). Absent: it may wait.
   */
  answersAtOnce?(request: Pick<CreateCampaignRequest, 'campaign'>): boolean;
}
