import { Bus } from '@campaign-ops/bus';
import { LocalServices } from '@campaign-ops/service-runtime';
import { ResolveConnectionRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { ConnectionAccessService } from './connection-access';
import { ConnectionCommands } from './connection-commands';
import { ConnectionQueries } from './connection-queries';
import { ConnectionsMessageController } from './connections.message.controller';
import { OAuthRounds } from './oauth-rounds';

describe('ConnectionsMessageController', () => {
  it("serves a launch's connection lookup to callers in its own process (standalone dispatch-service) as a function call", async () => {
    const asked: ResolveConnectionRequest[] = [];
    const queries = { resolve: async (request: ResolveConnectionRequest) => (asked.push(request), { connection: { id: 'con_1', status: 'active' } }) };
    const local = new LocalServices();
    new ConnectionsMessageController(
      {} as ConnectionCommands,
      queries as unknown as ConnectionQueries,
      {} as OAuthRounds,
      {} as ConnectionAccessService,
      local,
    );
    const bus = { request: () => Promise.reject(new Error('not over the bus')) } as unknown as Bus;
    const request: ResolveConnectionRequest = { accountId: 'acct_1', mode: 'live', channel: 'meta_ads' };
    expect(await local.request(bus, SUBJECTS.connectionResolve, request)).toEqual({ connection: { id: 'con_1', status: 'active' } });
    expect(asked).toEqual([request]);
  });
});
