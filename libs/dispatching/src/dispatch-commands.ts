import { Logger } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { Bus, BusTimeoutError, BusUnavailableError } from '@campaign-ops/bus';
import { DispatchNotFound, DispatchNotRetryable, dispatchStreamId, DispatchResource } from '@campaign-ops/dispatch-domain';
import { newId } from '@campaign-ops/ids';
import { CreateDispatchRequest, DispatchByIdRequest, ResolvedConnection, ResolveConnectionRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { DispatchStore, fromView } from './dispatch-store';

/** The write side of dispatches: launch and retry. */
export class DispatchCommands {
  private readonly logger = new Logger('dispatch-commands');

  constructor(
    private readonly store: DispatchStore,
    private readonly bus: Bus,
  ) {}

  async create(request: CreateDispatchRequest): Promise<Outcome<DispatchResource>> {
    const { caller, channel, campaign, idempotencyKey } = request;
    const connection = await this.resolveConnection({ accountId: caller.accountId, mode: caller.mode, channel });
    if (!connection.ok) return connection;
    const found = connection.value.connection;
    if (caller.mode === 'live') {
      if (!found || found.status === 'revoked' || found.status === 'pending')
        return failure('connection_required', `A live dispatch to ${channel} needs an active connection for ${channel}; connect a provider account first.`, 'channel');
      if (found.status === 'reauth_required')
        return failure('connection_reauth_required', `The ${channel} connection needs re-authentication before live dispatches can run.`, 'channel');
    }
    const dispatchId = newId('dsp');
    const streamId = dispatchStreamId(dispatchId);
    await this.store.repository.execute(
      streamId,
      {
        type: 'CreateDispatch',
        dispatchId,
        accountId: caller.accountId,
        mode: caller.mode,
        channel,
        campaign,
        connectionId: found?.status === 'active' ? found.id : null,
        idempotencyKey,
        now: new Date().toISOString(),
      },
      { accountId: caller.accountId, mode: caller.mode, requestId: caller.requestId },
    );
    await this.store.refreshView(streamId);
    return this.current(dispatchId);
  }

  async retry({ caller, id }: DispatchByIdRequest): Promise<Outcome<DispatchResource>> {
    const view = await this.store.views.get(id);
    if (!view || view.account_id !== caller.accountId || view.mode !== caller.mode) return failure('resource_missing', `No such dispatch: ${id}`, 'id');
    const streamId = dispatchStreamId(id);
    try {
      await this.store.repository.execute(
        streamId,
        { type: 'RetryDispatch', requestId: caller.requestId, now: new Date().toISOString() },
        { accountId: caller.accountId, mode: caller.mode, requestId: caller.requestId },
      );
    } catch (error) {
      if (error instanceof DispatchNotRetryable) return failure('dispatch_not_retryable', error.message, 'id');
      if (error instanceof DispatchNotFound) return failure('resource_missing', `No such dispatch: ${id}`, 'id');
      throw error;
    }
    await this.store.refreshView(streamId);
    return this.current(id);
  }

  private async current(id: string): Promise<Outcome<DispatchResource>> {
    const view = await this.store.views.get(id);
    return view ? success(fromView(view)) : failure('internal_error', 'The dispatch was recorded but cannot be read back yet.');
  }

  private async resolveConnection(request: ResolveConnectionRequest): Promise<Outcome<ResolvedConnection>> {
    try {
      return success(await this.bus.request<ResolvedConnection>(SUBJECTS.connectionResolve, request, { timeoutMs: 5000 }));
    } catch (error) {
      if (error instanceof BusTimeoutError || error instanceof BusUnavailableError) {
        this.logger.warn(`connection-service unreachable: ${error.message}`);
        return failure('service_unavailable', 'Connections cannot be checked right now; try again shortly.');
      }
      throw error;
    }
  }
}
