import { Inject, Injectable } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { EndpointNotFound, MAX_ENDPOINTS_PER_ACCOUNT, webhookStreamId, WebhookEventType } from '@campaign-ops/webhook-domain';
import { newId, randomBase62 } from '@campaign-ops/ids';
import { SecretBox } from '@campaign-ops/secret-box';
import { checkWebhookUrl, UrlPolicy } from '@campaign-ops/url-guard';
import { Caller, CreateWebhookRequest, ListResult, ListWebhooksRequest, UpdateWebhookRequest, WebhookByIdRequest } from '@campaign-ops/service-messages';
import { EndpointResource, EndpointStore, toEndpointResource } from './endpoint-store';
import { URL_POLICY } from './webhook-delivery.tokens';

type WithSecret = EndpointResource & { signing_secret: string };

/** Managing webhook endpoints: the use cases behind /v1/webhooks. */
@Injectable()
export class EndpointCommands {
  constructor(
    private readonly store: EndpointStore,
    private readonly secrets: SecretBox,
    @Inject(URL_POLICY) private readonly policy: UrlPolicy,
  ) {}

  async create({ caller, url, events }: CreateWebhookRequest): Promise<Outcome<WithSecret>> {
    const checked = await checkWebhookUrl(url, this.policy);
    if (!checked.ok) return failure(checked.code, checked.message, 'url');
    const existing = await this.store.views.count({ account_id: caller.accountId, mode: caller.mode, deleted: false });
    if (existing >= MAX_ENDPOINTS_PER_ACCOUNT)
      return failure('parameter_invalid', `An account can have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints per mode; delete one to add another.`);
    const id = newId('whk');
    const signingSecret = `whsec_${randomBase62(32)}`;
    await this.store.repository.execute(
      webhookStreamId(id),
      {
        type: 'CreateEndpoint',
        endpointId: id,
        accountId: caller.accountId,
        mode: caller.mode,
        url, // as the partner wrote it: checked, not rewritten
        events: unique(events),
        sealedSecret: this.secrets.seal(signingSecret),
        now: new Date().toISOString(),
      },
      metadataOf(caller),
    );
    const view = await this.store.refreshView(webhookStreamId(id));
    return view
      ? success({ ...toEndpointResource(view), signing_secret: signingSecret })
      : failure('internal_error', 'The endpoint was recorded but cannot be read back yet.');
  }

  async list({ caller, query }: ListWebhooksRequest): Promise<Outcome<ListResult<EndpointResource>>> {
    const page = await this.store.views.find(
      { account_id: caller.accountId, mode: caller.mode, deleted: false },
      { limit: query.limit, startingAfter: query.startingAfter },
    );
    return success({ data: page.items.map(toEndpointResource), hasMore: page.hasMore });
  }

  async get({ caller, id }: WebhookByIdRequest): Promise<Outcome<EndpointResource>> {
    const view = await this.store.owned(id, caller.accountId, caller.mode);
    return view ? success(toEndpointResource(view)) : missing(id);
  }

  async update({ caller, id, url, events, enabled }: UpdateWebhookRequest): Promise<Outcome<EndpointResource>> {
    if (!(await this.store.owned(id, caller.accountId, caller.mode))) return missing(id);
    let checkedUrl: string | undefined;
    if (url !== undefined) {
      const checked = await checkWebhookUrl(url, this.policy);
      if (!checked.ok) return failure(checked.code, checked.message, 'url');
      checkedUrl = url;
    }
    return this.run(caller, id, { type: 'UpdateEndpoint', url: checkedUrl, events: events && unique(events), enabled, now: new Date().toISOString() }, (v) =>
      toEndpointResource(v),
    );
  }

  async rotateSecret({ caller, id }: WebhookByIdRequest): Promise<Outcome<WithSecret>> {
    if (!(await this.store.owned(id, caller.accountId, caller.mode))) return missing(id);
    const signingSecret = `whsec_${randomBase62(32)}`;
    return this.run(caller, id, { type: 'RotateSecret', sealedSecret: this.secrets.seal(signingSecret), now: new Date().toISOString() }, (v) => ({
      ...toEndpointResource(v),
      signing_secret: signingSecret,
    }));
  }

  async delete({ caller, id }: WebhookByIdRequest): Promise<Outcome<{ id: string; deleted: true }>> {
    if (!(await this.store.owned(id, caller.accountId, caller.mode))) return missing(id);
    return this.run(caller, id, { type: 'DeleteEndpoint', now: new Date().toISOString() }, () => ({ id, deleted: true as const }));
  }

  private async run<T>(
    caller: Caller,
    id: string,
    command: Parameters<EndpointStore['repository']['execute']>[1],
    answer: (view: NonNullable<Awaited<ReturnType<EndpointStore['refreshView']>>>) => T,
  ): Promise<Outcome<T>> {
    try {
      await this.store.repository.execute(webhookStreamId(id), command, metadataOf(caller));
    } catch (error) {
      if (error instanceof EndpointNotFound) return missing(id);
      throw error;
    }
    const view = await this.store.refreshView(webhookStreamId(id));
    return view ? success(answer(view)) : missing(id);
  }
}

const unique = (events: string[]) => [...new Set(events)] as WebhookEventType[];
const metadataOf = (caller: Caller) => ({ accountId: caller.accountId, mode: caller.mode, requestId: caller.requestId });
const missing = (id: string) => failure('resource_missing', `No such webhook endpoint: ${id}`, 'id');
