/**
 * The ad networks a dispatch can target, and the facts of each that the sandbox simulator
 * applies (shared/CHANNELS.md). Keep each channel's assumptions here, in one place.
 */
export const CHANNELS = [
  'google_ads',
  'meta_ads',
  'tiktok_ads',
  'linkedin_ads',
  'microsoft_ads',
  'snapchat_ads',
  'pinterest_ads',
  'reddit_ads',
  'x_ads',
  'amazon_ads',
] as const;

export type Channel = (typeof CHANNELS)[number];

export const isChannel = (value: unknown): value is Channel => typeof value === 'string' && (CHANNELS as readonly string[]).includes(value);

export const OBJECTIVES = ['conversion', 'traffic', 'awareness', 'leads', 'engagement', 'app_installs'] as const;
export type Objective = (typeof OBJECTIVES)[number];

export const BUDGET_TYPES = ['daily', 'lifetime'] as const;
export type BudgetType = (typeof BUDGET_TYPES)[number];

/** How a provider wants the budget amount expressed. */
export type BudgetUnit = 'micros' | 'minor' | 'major';

export interface ChannelRules {
  budgetUnit: BudgetUnit;
  /** Minimum daily budget in USD-equivalent; null where the provider reports its own. */
  minimumDailyBudgetUsd: number | null;
}

export const CHANNEL_RULES: Record<Channel, ChannelRules> = {
  google_ads: { budgetUnit: 'micros', minimumDailyBudgetUsd: 1 },
  meta_ads: { budgetUnit: 'minor', minimumDailyBudgetUsd: 1 },
  tiktok_ads: { budgetUnit: 'major', minimumDailyBudgetUsd: 20 },
  linkedin_ads: { budgetUnit: 'major', minimumDailyBudgetUsd: 10 },
  microsoft_ads: { budgetUnit: 'major', minimumDailyBudgetUsd: 1 },
  snapchat_ads: { budgetUnit: 'micros', minimumDailyBudgetUsd: 20 },
  pinterest_ads: { budgetUnit: 'micros', minimumDailyBudgetUsd: 5 },
  reddit_ads: { budgetUnit: 'micros', minimumDailyBudgetUsd: 5 },
  x_ads: { budgetUnit: 'micros', minimumDailyBudgetUsd: 1 },
  amazon_ads: { budgetUnit: 'major', minimumDailyBudgetUsd: 1 },
};

/**
 * Currencies the simulated ad accounts can bill in: ISO 4217 minor-unit exponent and an
 * approximate USD value of one major unit (for minimum-budget checks only, never for money).
 */
export const SANDBOX_CURRENCIES: Record<string, { exponent: number; usd: number }> = {
  USD: { exponent: 2, usd: 1 },
  EUR: { exponent: 2, usd: 1.08 },
  GBP: { exponent: 2, usd: 1.27 },
  CHF: { exponent: 2, usd: 1.13 },
  CAD: { exponent: 2, usd: 0.73 },
  AUD: { exponent: 2, usd: 0.66 },
  NZD: { exponent: 2, usd: 0.6 },
  JPY: { exponent: 0, usd: 0.0067 },
  KRW: { exponent: 0, usd: 0.00072 },
  CNY: { exponent: 2, usd: 0.14 },
  HKD: { exponent: 2, usd: 0.128 },
  SGD: { exponent: 2, usd: 0.74 },
  INR: { exponent: 2, usd: 0.012 },
  BRL: { exponent: 2, usd: 0.18 },
  MXN: { exponent: 2, usd: 0.055 },
  SEK: { exponent: 2, usd: 0.095 },
  NOK: { exponent: 2, usd: 0.093 },
  DKK: { exponent: 2, usd: 0.145 },
  PLN: { exponent: 2, usd: 0.25 },
  CZK: { exponent: 2, usd: 0.043 },
  ZAR: { exponent: 2, usd: 0.055 },
  AED: { exponent: 2, usd: 0.27 },
  SAR: { exponent: 2, usd: 0.27 },
  ILS: { exponent: 2, usd: 0.27 },
  TRY: { exponent: 2, usd: 0.03 },
  KWD: { exponent: 3, usd: 3.25 },
  BHD: { exponent: 3, usd: 2.65 },
  CLP: { exponent: 0, usd: 0.0011 },
};
