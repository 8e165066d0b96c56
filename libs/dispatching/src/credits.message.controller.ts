import { MessageController } from '@campaign-ops/service-runtime';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { DurableConsumerOptions } from '@campaign-ops/bus-transport';
import { CreditBalancesRequest, GrantCreditsRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { CreditHandlers } from './credit-handlers';
import { RelayedEvent } from './dispatch-relay';

/** Credit balances and grants: asked by the gateway, and applied from the accounts' events. */
@MessageController()
export class CreditsMessageController {
  constructor(private readonly credits: CreditHandlers) {}

  @MessagePattern(SUBJECTS.creditsGrant)
  grant(@Payload() request: GrantCreditsRequest) {
    return this.credits.grant(request);
  }

  @MessagePattern(SUBJECTS.creditsBalances)
  balances(@Payload() request: CreditBalancesRequest) {
    return this.credits.balances(request);
  }

  /** Grants recorded on an account (Admin API, ops command line) reach its ledgers once. */
  @EventPattern('evt.account.>', { durable: 'credit-grants' } satisfies DurableConsumerOptions)
  applyGrants(@Payload() event: RelayedEvent) {
    return this.credits.onAccountEvent(event);
  }
}
