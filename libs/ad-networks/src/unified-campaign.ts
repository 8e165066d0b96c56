import { CampaignSpec, OBJECTIVES, Objective, ProviderError } from '@campaign-ops/channels';

/** The unified campaign's objective, checked against the closed set (docs/api.md#dispatches-and-retries). */
export function objectiveOf(campaign: CampaignSpec): Objective {
  if (!(OBJECTIVES as readonly string[]).includes(campaign.objective))
    throw new ProviderError('validation', `objective ${campaign.objective} is not one of ${OBJECTIVES.join(', ')}`, 'objective_unsupported');
  return campaign.objective as Objective;
}

/** A network that cannot express this objective with what a unified campaign carries. */
export function unsupportedObjective(channel: string, objective: Objective, why: string): ProviderError {
  return new ProviderError('validation', `${channel} cannot create a ${objective} campaign: ${why}`, 'objective_unsupported');
}

/** Lifetime budgets need an end: refused before any call, where the network would refuse it anyway. */
export function lifetimeEnd(channel: string, campaign: CampaignSpec): string | undefined {
  if (campaign.budget.type === 'lifetime' && !campaign.schedule.end_at)
    throw new ProviderError('validation', `${channel} needs schedule.end_at for a lifetime budget`, 'lifetime_budget_needs_end');
  return campaign.schedule.end_at;
}
