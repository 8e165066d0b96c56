import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ApiError } from '@campaign-ops/api-errors';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { AccountDirectory } from '@campaign-ops/accounts';
import { CreditBalances, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { ServiceClient } from '../http/service-client';
import { Caller } from '../http/request-context';
import { AccountResponse } from '@campaign-ops/api-contract';

@ApiTags('Account')
@ApiSecurity('apiKey')
@Controller('v1/account')
@UseGuards(ApiKeyGuard)
export class AccountController {
  constructor(
    private readonly directory: AccountDirectory,
    private readonly services: ServiceClient,
  ) {}

  /** The key's account, seen from the key's mode. */
  @Get()
  @ApiOperation({ operationId: 'getAccount', summary: "The key's account", description: "Its credits balance is the key's mode's." })
  @ApiAnswer(AccountResponse, { errors: ['resource_missing'] })
  async get(@Caller() caller: Caller) {
    const account = await this.directory.account(caller.accountId);
    if (!account) throw new ApiError('resource_missing', 'The account of this key no longer exists.');
    const balances = await this.services.call<CreditBalances>(SUBJECTS.creditsBalances, { caller, accountId: caller.accountId });
    return {
      id: account.id,
      name: account.name,
      environment: caller.mode === 'live' ? 'live' : 'sandbox',
      credits_balance: balances[caller.mode],
      oauth_redirect_uris: account.oauth_redirect_uris,
    };
  }
}
