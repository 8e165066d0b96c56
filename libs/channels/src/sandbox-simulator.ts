import { createHash } from 'node:crypto';
import { CHANNEL_RULES, SANDBOX_CURRENCIES } from './channel-catalog';
import { ChannelProvider, CreateCampaignRequest, CreatedCampaign, ProviderError } from './channel-provider.port';

/** Magic campaign names partners use to make the sandbox take a path on purpose (docs/api.md#dispatches-and-retries). */
export const SANDBOX_MAGIC = {
  fail: '[sandbox:fail]',
  transient: '[sandbox:transient]',
  reauth: '[sandbox:reauth]',
  slow: '[sandbox:slow]',
} as const;

export interface SandboxSimulatorOptions {
  /** How long `[sandbox:slow]` takes; about 3 s as documented. */
  slowMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The built-in simulator behind every test-key dispatch. It applies the channel's real rules
 * (currencies, budget units, minimum daily budgets) and answers like a provider would, with a
 * resource id stable for the dispatch (`sbx_<channel>_<digits>`), so retries never create two.
 */
export class SandboxSimulator implements ChannelProvider {
  private readonly slowMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: SandboxSimulatorOptions = {}) {
    this.slowMs = options.slowMs ?? 3000;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Every answer but `[sandbox:slow]`'s comes at once. */
  answersAtOnce({ campaign }: Pick<CreateCampaignRequest, 'campaign'>): boolean {
    return !campaign.name.includes(SANDBOX_MAGIC.slow);
  }

  async createCampaign(request: CreateCampaignRequest): Promise<CreatedCampaign> {
    const { campaign, channel } = request;
    const name = campaign.name;

    if (name.includes(SANDBOX_MAGIC.slow)) await this.sleep(this.slowMs);
    if (name.includes(SANDBOX_MAGIC.transient) && request.attempt === 1) {
      throw new ProviderError('transient', 'The provider is temporarily unavailable (simulated 503).', 'HTTP_503', 503);
    }
    if (name.includes(SANDBOX_MAGIC.reauth)) {
      throw new ProviderError('auth', 'The provider refused the access token (simulated).', 'AUTH_TOKEN_EXPIRED', 401);
    }
    if (name.includes(SANDBOX_MAGIC.fail)) {
      throw new ProviderError('validation', 'The provider rejected the campaign (simulated validation failure).', 'SANDBOX_VALIDATION_FAILED', 400);
    }

    this.applyChannelRules(request);
    return { providerResourceId: `sbx_${channel}_${stableDigits(request.dispatchId)}` };
  }

  /**
   * The dry run of a test key: the channel's rules, and `[sandbox:fail]` refused as a launch would
   * be. The other magic names are about what happens over time (a 503, a slow answer, a refused
   * token), which a dry run does not reach.
   */
  async validateCampaign(request: Pick<CreateCampaignRequest, 'channel' | 'campaign'>): Promise<{ warnings: string[] }> {
    if (request.campaign.name.includes(SANDBOX_MAGIC.fail)) {
      throw new ProviderError('validation', 'The provider rejected the campaign (simulated validation failure).', 'SANDBOX_VALIDATION_FAILED', 400);
    }
    this.applyChannelRules(request);
    return { warnings: [] };
  }

  private applyChannelRules({ channel, campaign }: Pick<CreateCampaignRequest, 'channel' | 'campaign'>): void {
    const { amount_micros: micros, currency, type } = campaign.budget;
    const money = SANDBOX_CURRENCIES[currency];
    if (!money) {
      throw new ProviderError('validation', `${channel} ad accounts cannot bill in ${currency}.`, 'currency_unsupported', 400);
    }
    const rules = CHANNEL_RULES[channel];
    if (rules.budgetUnit === 'minor' && micros % 10 ** (6 - money.exponent) !== 0) {
      throw new ProviderError(
        'validation',
        `${channel} takes budgets in whole minor units of ${currency}; ${micros} micros is not one.`,
        'budget_not_whole_minor_units',
        400,
      );
    }
    if (type === 'daily' && rules.minimumDailyBudgetUsd !== null) {
      const usd = (micros / 1_000_000) * money.usd;
      if (usd < rules.minimumDailyBudgetUsd) {
        throw new ProviderError(
          'validation',
          `${channel} needs a daily budget of at least ${rules.minimumDailyBudgetUsd} USD or its equivalent in ${currency}.`,
          'budget_below_minimum',
          400,
        );
      }
    }
  }
}

function stableDigits(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex').slice(0, 13);
  return BigInt('0x' + hex)
    .toString()
    .padStart(16, '0')
    .slice(-12);
}
