import { Controller, Get, Req, UseGuards } from '@nestjs/common';
import { ApiError } from '@campaign-ops/api-errors';
import { AccountDirectory } from '@campaign-ops/accounts';
import { ApiKeyGuard } from '../http/auth.guards';
import { callerOf, GatewayRequest } from '../http/request-context';

@Controller('v1/account')
@UseGuards(ApiKeyGuard)
export class AccountController {
  constructor(private readonly directory: AccountDirectory) {}

  /** The key's account, seen from the key's mode. */
  @Get()
  async get(@Req() request: GatewayRequest) {
    const caller = callerOf(request);
    const account = await this.directory.account(caller.accountId);
    if (!account) throw new ApiError('resource_missing', 'The account of this key no longer exists.');
    return { id: account.id, name: account.name, environment: caller.mode === 'live' ? 'live' : 'sandbox', credits_balance: account.credits[caller.mode] };
  }
}
