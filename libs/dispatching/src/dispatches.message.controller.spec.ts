import { Bus } from '@campaign-ops/bus';
import { success } from '@campaign-ops/api-errors';
import { LocalServices } from '@campaign-ops/service-runtime';
import { CreateDispatchRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { CampaignChecks } from './campaign-checks';
import { DispatchCommands } from './dispatch-commands';
import { DispatchQueries } from './dispatch-queries';
import { DispatchesMessageController } from './dispatches.message.controller';

describe('DispatchesMessageController', () => {
  it('serves launches to callers in its own process (the standalone gateway) as function calls', async () => {
    const launched: CreateDispatchRequest[] = [];
    const commands = { create: async (request: CreateDispatchRequest) => (launched.push(request), success({ id: 'dsp_1' })) } as unknown as DispatchCommands;
    const local = new LocalServices();
    new DispatchesMessageController(commands, {} as DispatchQueries, {} as CampaignChecks, local);
    const bus = { request: () => Promise.reject(new Error('not over the bus')) } as unknown as Bus;
    const request = {
      caller: { accountId: 'acct_1', mode: 'test', requestId: 'req_1' },
      channel: 'meta_ads',
      campaign: {},
    } as unknown as CreateDispatchRequest;
    expect(await local.request(bus, SUBJECTS.dispatchCreate, request)).toEqual(success({ id: 'dsp_1' }));
    expect(launched).toEqual([request]);
  });
});
