import type { Response } from 'express';
import { AccountDirectory } from '@campaign-ops/accounts';
import { ServiceConfig } from '@campaign-ops/service-runtime';
import { SUBJECTS } from '@campaign-ops/service-messages';
import { Caller, GatewayRequest } from '../http/request-context';
import { ServiceClient } from '../http/service-client';
import { ConnectionsController } from './connections.http.controller';

describe('ConnectionsController: how long each call waits for connection-service', () => {
  const calls: Array<{ subject: string; timeoutMs: number | undefined }> = [];
  const services = {
    call: async (subject: string, _request: object, options?: { timeoutMs?: number }) => {
      calls.push({ subject, timeoutMs: options?.timeoutMs });
      return subject === SUBJECTS.connectionOAuthCallback
        ? { location: 'https://partner.example/back?status=active' }
        : subject === SUBJECTS.connectionList
          ? { data: [], hasMore: false }
          : {};
    },
  } as unknown as ServiceClient;
  const directory = { account: async () => ({ oauth_redirect_uris: ['https://partner.example/back'] }) } as unknown as AccountDirectory;
  const controller = new ConnectionsController(services, { requestTimeoutMs: 10_000, connectionRequestTimeoutMs: 120_000 } as ServiceConfig, directory);
  const caller: Caller = { accountId: 'acct_1', mode: 'live', requestId: 'req_1' };
  const request = { requestId: 'req_1', caller: { ...caller, keyId: 'key_1' } } as unknown as GatewayRequest;
  const response = { setHeader: () => undefined, status: () => ({ json: () => undefined }) } as unknown as Response;

  beforeEach(() => void calls.splice(0));

  it('gives token import and OAuth start, reauthorization and the OAuth callback the longer connection timeout: each calls the network up to four times', async () => {
    await controller.create(caller, { channel: 'meta_ads', provider_account_id: 'act_1', credentials: { access_token: 't' } } as never);
    await controller.reauthorize(caller, 'con_1', { credentials: { access_token: 't' } } as never);
    await controller.oauthCallback(request, response, { state: 's', code: 'c' });
    expect(calls).toEqual([
      { subject: SUBJECTS.connectionCreate, timeoutMs: 120_000 },
      { subject: SUBJECTS.connectionReauthorize, timeoutMs: 120_000 },
      { subject: SUBJECTS.connectionOAuthCallback, timeoutMs: 120_000 },
    ]);
  });

  it('leaves list, get and delete, which call no network, on the default timeout', async () => {
    await controller.list(caller, {} as never);
    await controller.get(caller, 'con_1');
    await controller.remove(caller, 'con_1', {} as never);
    expect(calls).toEqual([
      { subject: SUBJECTS.connectionList, timeoutMs: undefined },
      { subject: SUBJECTS.connectionGet, timeoutMs: undefined },
      { subject: SUBJECTS.connectionDelete, timeoutMs: undefined },
    ]);
  });
});
