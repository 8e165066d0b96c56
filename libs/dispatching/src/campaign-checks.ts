import { Inject, Injectable } from '@nestjs/common';
import { Outcome, providerRefusal, success } from '@campaign-ops/api-errors';
import { ChannelProvider, ProviderError } from '@campaign-ops/channels';
import { CampaignValidation, ValidateCampaignRequest } from '@campaign-ops/service-messages';
import { DispatchCommands } from './dispatch-commands';
import { SANDBOX_PROVIDER } from './dispatch-executor';
import { LiveLaunches } from './live-launches';

/**
 * The dry run of a launch (docs/api.md#dispatches-and-retries, `POST /v1/campaigns/validate`): a live key needs the same
 * active connection as a launch, and the campaign is checked by the network's validate-only call
 * where it has one (`provider`) or by the channel's rules the adapter knows (`rules`); a test key's
 * by the simulator (`sandbox`). Nothing is created, charged, stored or sent as an event.
 */
@Injectable()
export class CampaignChecks {
  constructor(
    private readonly commands: DispatchCommands,
    private readonly live: LiveLaunches,
    @Inject(SANDBOX_PROVIDER) private readonly sandbox: ChannelProvider,
  ) {}

  async validate({ caller, channel, campaign }: ValidateCampaignRequest): Promise<Outcome<CampaignValidation>> {
    if (caller.mode === 'test') {
      try {
        const { warnings } = await this.sandbox.validateCampaign({ channel, campaign });
        return success({ valid: true, channel, checked_by: 'sandbox', warnings });
      } catch (error) {
        if (error instanceof ProviderError && error.kind === 'validation') return providerRefusal(error.message, error.providerCode);
        throw error;
      }
    }
    const connection = await this.commands.liveConnection(caller, channel);
    if (!connection.ok) return connection;
    const checked = await this.live.check({ accountId: caller.accountId, mode: caller.mode, channel, campaign, connectionId: connection.value });
    if (!checked.ok) return checked;
    return success({ valid: true, channel, checked_by: checked.value.checkedBy, warnings: checked.value.warnings });
  }
}
