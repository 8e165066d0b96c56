import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiQuery, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  ConnectionResponse,
  ConnectionWithAuthorizationUrlResponse,
  CreateConnectionDto,
  ListConnectionsQueryDto,
  NoBody,
  OAuthRedirectResponse,
  ReauthorizeConnectionDto,
} from '@campaign-ops/api-contract';
import { AccountDirectory } from '@campaign-ops/accounts';
import { ApiAnswer, CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { ListResult, OAuthCallbackResult, SUBJECTS } from '@campaign-ops/service-messages';
import { ApiKeyGuard } from '../http/auth.guards';
import { Caller, GatewayRequest, ListPage } from '../http/request-context';
import { CallOptions, ServiceClient } from '../http/service-client';
import { pageOf } from '../http/validation';

const ConnectionId = () => ApiParam({ name: 'id', description: 'The connection id (`con_…`).' });
/** What connecting can answer besides the usual: the redirect_uri's rules, the provider's verdict, the slot, the channel's settings. */
const CONNECT_ERRORS = [
  'url_invalid',
  'url_not_https',
  'redirect_uri_not_registered',
  'credentials_invalid',
  'provider_account_unreachable',
  'connection_exists',
  'channel_live_unavailable',
  'channel_not_configured',
  'provider_unavailable',
];
/** A query value as the browser sent it (a repeated parameter counts as absent). */
const single = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

@ApiTags('Connections')
@Controller('v1/connections')
export class ConnectionsController {
  /**
   * Token import, reauthorization and the OAuth callback make one to four calls to the ad network
   * (each up to CHANNEL_TIMEOUT_MS): they wait BUS_CONNECTION_REQUEST_TIMEOUT_MS, so a slow network
   * is not told to the browser as 503 while the connection is activated anyway.
   */
  private readonly reachesNetwork: CallOptions;

  constructor(
    private readonly services: ServiceClient,
    @Inject(CONFIG) config: ServiceConfig,
    private readonly directory: AccountDirectory,
  ) {
    this.reachesNetwork = { timeoutMs: config.connectionRequestTimeoutMs };
  }

  /** An OAuth round's `redirect_uri` must be one the account registered (docs/api.md#connections-and-oauth): its list goes along with the round. */
  private async registeredRedirectUris(caller: Caller, redirectUri: string | undefined): Promise<{ oauthRedirectUris?: string[] }> {
    if (redirectUri === undefined) return {};
    return { oauthRedirectUris: (await this.directory.account(caller.accountId))?.oauth_redirect_uris ?? [] };
  }

  @Post()
  @HttpCode(200)
  @UseGuards(ApiKeyGuard)
  @ApiSecurity('apiKey')
  @ApiOperation({
    operationId: 'createConnection',
    summary: 'Connect an ad account',
    description:
      'With `credentials`: the token is checked against the provider (the ad account is read with it) and the connection is `active` at once, with the account’s currency and time zone. ' +
      'With `redirect_uri`: the connection is `pending` and the answer carries `authorization_url`, the provider’s consent page. ' +
      'A test key needs neither (a sandbox connection, USD and UTC unless `sandbox` says otherwise). ' +
      'A new connection to the same provider account replaces the channel’s current one; another provider account answers 409 `connection_exists`.',
  })
  @ApiAnswer(ConnectionWithAuthorizationUrlResponse, { errors: CONNECT_ERRORS })
  async create(@Caller() caller: Caller, @Body() body: CreateConnectionDto) {
    return this.services.call(
      SUBJECTS.connectionCreate,
      {
        caller,
        channel: body.channel,
        providerAccountId: body.provider_account_id,
        credentials: body.credentials && { ...body.credentials },
        redirectUri: body.redirect_uri,
        ...(await this.registeredRedirectUris(caller, body.redirect_uri)),
        sandbox: body.sandbox && { ...body.sandbox },
      },
      this.reachesNetwork,
    );
  }

  @Get()
  @UseGuards(ApiKeyGuard)
  @ApiSecurity('apiKey')
  @ApiOperation({ operationId: 'listConnections', summary: 'List connections', description: 'Newest first.' })
  @ApiAnswer(ConnectionResponse, { list: { query: ListConnectionsQueryDto } })
  async list(@Caller() caller: Caller, @Query() query: ListConnectionsQueryDto) {
    const result = await this.services.call<ListResult<unknown>>(SUBJECTS.connectionList, {
      caller,
      query: { ...pageOf(query), channel: query.channel, status: query.status },
    });
    return new ListPage(result.data, result.hasMore);
  }

  /**
   * The person's browser back from the consent page: no API key (the `state` says whose round it
   * is), and the answer is a 302 to the partner's `redirect_uri` (sent here, not by the envelope
   * interceptor, whose 200 it is not). A `state`
   * never issued or expired is 400 `state_invalid` in the envelope. GET, so idempotency does not
   * apply; without a key it is rate limited by address.
   */
  @Get('oauth/callback')
  @ApiOperation({
    operationId: 'completeConnectionOAuth',
    summary: 'OAuth callback',
    description:
      'Where the provider sends the person’s browser after the consent (this service’s `PUBLIC_BASE_URL` + `/v1/connections/oauth/callback`); no API key. ' +
      'Answers 302 to the partner’s `redirect_uri` with `connection_id` and `status`, or with `error` (`access_denied`, `state_invalid` for a state already used, `credentials_invalid`, `provider_account_unreachable`, `provider_unavailable`, `connection_exists`).',
  })
  @ApiQuery({ name: 'state', required: true, description: 'The round’s state, as the consent page was given it (without it: 400 `state_invalid`).' })
  @ApiQuery({ name: 'code', required: false, description: 'The authorization code to exchange.' })
  @ApiQuery({ name: 'error', required: false, description: 'The provider’s refusal (e.g. `access_denied`).' })
  @ApiAnswer(OAuthRedirectResponse, { redirect: true, errors: ['state_invalid'] })
  async oauthCallback(@Req() request: GatewayRequest, @Res() response: Response, @Query() query: Record<string, unknown>): Promise<void> {
    const singles = Object.fromEntries(Object.entries(query).flatMap(([name, value]) => (typeof value === 'string' ? [[name, value]] : [])));
    const result = await this.services.call<OAuthCallbackResult>(
      SUBJECTS.connectionOAuthCallback,
      {
        requestId: request.requestId,
        state: single(query.state),
        code: single(query.code),
        error: single(query.error),
        query: singles,
      },
      this.reachesNetwork,
    );
    // Still JSON, as every answer of the API: the browser follows Location, a script can read it.
    response.setHeader('Cache-Control', 'no-store');
    response.setHeader('Referrer-Policy', 'no-referrer');
    response.setHeader('Location', result.location);
    response.status(302).json({ success: true, data: { location: result.location }, request_id: request.requestId });
  }

  @Get(':id')
  @UseGuards(ApiKeyGuard)
  @ApiSecurity('apiKey')
  @ApiOperation({ operationId: 'getConnection', summary: 'Get a connection' })
  @ConnectionId()
  @ApiAnswer(ConnectionResponse)
  get(@Caller() caller: Caller, @Param('id') id: string) {
    return this.services.call(SUBJECTS.connectionGet, { caller, id });
  }

  @Delete(':id')
  @UseGuards(ApiKeyGuard)
  @ApiSecurity('apiKey')
  @ApiOperation({
    operationId: 'deleteConnection',
    summary: 'Delete a connection',
    description: 'The connection is `revoked` and its tokens are destroyed; deleting it again answers the same.',
  })
  @ConnectionId()
  @ApiAnswer(ConnectionResponse)
  remove(@Caller() caller: Caller, @Param('id') id: string, @Body() _body: NoBody) {
    return this.services.call(SUBJECTS.connectionDelete, { caller, id });
  }

  @Post(':id/reauthorize')
  @HttpCode(200)
  @UseGuards(ApiKeyGuard)
  @ApiSecurity('apiKey')
  @ApiOperation({
    operationId: 'reauthorizeConnection',
    summary: 'Reauthorize a connection',
    description:
      'New `credentials` (checked like an import) make it `active` again at once; `redirect_uri` starts a new OAuth round (`authorization_url`). A test key needs neither.',
  })
  @ConnectionId()
  @ApiAnswer(ConnectionWithAuthorizationUrlResponse, { errors: CONNECT_ERRORS.filter((code) => code !== 'connection_exists') })
  async reauthorize(@Caller() caller: Caller, @Param('id') id: string, @Body() body: ReauthorizeConnectionDto) {
    return this.services.call(
      SUBJECTS.connectionReauthorize,
      {
        caller,
        id,
        credentials: body.credentials && { ...body.credentials },
        redirectUri: body.redirect_uri,
        ...(await this.registeredRedirectUris(caller, body.redirect_uri)),
      },
      this.reachesNetwork,
    );
  }
}
