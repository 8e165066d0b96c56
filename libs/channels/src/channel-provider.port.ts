import { Channel } from './channel-catalog';

/** The unified campaign a partner sends (API.md §3). */
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
 * How a provider refused: `transient` is retried inside the dispatch, `auth` needs the
 * connection re-authorised, `validation` is final until the campaign changes.
 */
export type ProviderErrorKind = 'transient' | 'auth' | 'validation';

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly providerCode: string | null,
    readonly httpStatus: number | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** One ad network, live or simulated. */
export interface ChannelProvider {
  createCampaign(request: CreateCampaignRequest): Promise<CreatedCampaign>;
}
