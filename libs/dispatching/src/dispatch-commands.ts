import { Inject, Injectable, Logger } from '@nestjs/common';
import { Channel } from '@campaign-ops/channels';
import { failure, Outcome, success, unavailable } from '@campaign-ops/api-errors';
import { BUS, Bus, BusTimeoutError, BusUnavailableError } from '@campaign-ops/bus';
import {
  evolve,
  DispatchEvent,
  upcastDispatchEvent,
  Dispatch,
  toDispatchResource,
  DispatchNotFound,
  DispatchNotRetryable,
  dispatchStreamId,
  DispatchResource,
  InsufficientCredits,
  Mode,
} from '@campaign-ops/dispatch-domain';
import { toDomainEvent } from '@campaign-ops/event-sourcing';
import { RecordedEvent, WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { newId } from '@campaign-ops/ids';
import { ChargedDispatches } from './charged-dispatches';
import { CreditLedgers } from './credit-ledgers';
import { DispatchBacklog } from './dispatch-backlog';
import { DispatchIdempotency } from './dispatch-idempotency';
import { CreateDispatchRequest, DispatchByIdRequest, ResolvedConnection, ResolveConnectionRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { LocalServices } from '@campaign-ops/service-runtime';
import { DispatchStore } from './dispatch-store';
import { LiveLaunches } from './live-launches';

/** The write side of dispatches: launch (the charge first, then the dispatch: see ChargedDispatches) and retry. */
@Injectable()
export class DispatchCommands {
  private readonly logger = new Logger('dispatch-commands');

  constructor(
    private readonly store: DispatchStore,
    private readonly ledgers: CreditLedgers,
    private readonly charged: ChargedDispatches,
    private readonly idempotency: DispatchIdempotency,
    @Inject(BUS) private readonly bus: Bus,
    /** Which channels can run live dispatches (an adapter exists and is configured for them). */
    private readonly live: LiveLaunches,
    private readonly backlog: DispatchBacklog,
    private readonly local: LocalServices,
  ) {}

  async create(request: CreateDispatchRequest): Promise<Outcome<DispatchResource>> {
    const { caller, channel, campaign, idempotencyKey } = request;
    const dispatchId = newId('dsp');
    // The key first: a retry of a launch that was made answers that launch, whatever changed since.
    if (idempotencyKey) {
      const earlier = await this.claimIdempotencyKey(caller.accountId, caller.mode, idempotencyKey, dispatchId, { channel, campaign });
      if (earlier) return earlier;
    }
    // Until the charge is appended nothing was made: a refusal gives the key back.
    const refuse = async (outcome: Outcome<never>) => {
      if (idempotencyKey) await this.idempotency.release(caller.accountId, caller.mode, idempotencyKey, dispatchId);
      return outcome;
    };
    // Overload (docs/api.md#dispatches-and-retries): past the backlog's bound a launch is refused before anything is charged or stored.
    const backlog = this.backlog.check();
    if (backlog.refuse) {
      return refuse(
        unavailable(
          `Launches are coming in faster than dispatches can be started: ${backlog.waiting} are waiting, about ${Math.round(backlog.waiting / backlog.pace)} s of work. Try again after the Retry-After seconds.`,
          backlog.retryAfterSeconds,
        ),
      );
    }
    const connection = await this.resolveConnection({ accountId: caller.accountId, mode: caller.mode, channel });
    if (!connection.ok) return refuse(connection);
    const found = connection.value.connection;
    if (caller.mode === 'live') {
      const usable = this.usableForLive(channel, found);
      if (!usable.ok) return refuse(usable);
    }
    let charge: RecordedEvent;
    try {
      const charged = await this.ledgers.execute(
        caller.accountId,
        caller.mode,
        {
          type: 'ChargeForDispatch',
          dispatch: { dispatchId, channel, campaign, connectionId: found?.status === 'active' ? found.id : null, idempotencyKey, requestId: caller.requestId },
          now: new Date().toISOString(),
        },
        { requestId: caller.requestId },
      );
      charge = charged.recorded[0];
    } catch (error) {
      if (error instanceof InsufficientCredits) return refuse(failure('insufficient_credits', `${error.message} Add credits to launch more.`));
      // Any other failure may come after the charge was written (a view write, a lost answer):
      // the key stays with this dispatch, whose charge the ledger processor completes if it exists.
      if (error instanceof WrongExpectedRevisionError && idempotencyKey)
        await this.idempotency.release(caller.accountId, caller.mode, idempotencyKey, dispatchId);
      throw error;
    }
    const accepted = await this.charged.make(charge, caller.accountId, caller.mode);
    // The answer is the dispatch as accepted, even if the executor has already moved it on.
    return success(toDispatchResource(accepted));
  }

  /**
   * Null when the key is ours for `dispatchId`; else the answer for the dispatch that holds it (as
   * it was accepted), or 409 while that dispatch is still being made.
   */
  private async claimIdempotencyKey(
    accountId: string,
    mode: Mode,
    key: string,
    dispatchId: string,
    request: unknown,
  ): Promise<Outcome<DispatchResource> | null> {
    const claim = await this.idempotency.claim(accountId, mode, key, dispatchId, request);
    if (claim.kind === 'claimed') return null;
    if (!claim.sameRequest) return failure('idempotency_key_reused', 'This Idempotency-Key was used with another request; use a new key for a new launch.');
    const { recorded } = await this.store.stateOf(dispatchStreamId(claim.dispatchId), 0);
    if (recorded.length > 0) {
      const first = evolve({ status: 'none' }, toDomainEvent<DispatchEvent>(recorded[0], upcastDispatchEvent)) as Dispatch;
      return success(toDispatchResource(first));
    }
    // No dispatch yet. If its charge exists (the process died right after it), make the dispatch now.
    const charged = await this.charged.orphanedCharge(accountId, mode, claim.dispatchId);
    if (charged) return success(toDispatchResource(await this.charged.make(charged, accountId, mode)));
    if (await this.idempotency.takeOverAbandoned(accountId, mode, key, claim, dispatchId)) return null;
    return failure('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry shortly.');
  }

  async retry({ caller, id }: DispatchByIdRequest): Promise<Outcome<DispatchResource>> {
    const view = await this.store.views.get(id);
    if (!view || view.account_id !== caller.accountId || view.mode !== caller.mode) return failure('resource_missing', `No such dispatch: ${id}`, 'id');
    const streamId = dispatchStreamId(id);
    // A live run needs the channel's connection as a launch does, and uses the one the channel has
    // now: the dispatch's own may have been replaced (a reconnection revokes the old one).
    let connectionId: string | undefined;
    if (caller.mode === 'live' && view.status === 'failed') {
      const connection = await this.liveConnection(caller, view.channel);
      if (!connection.ok) return connection;
      connectionId = connection.value;
    }
    let decided: Awaited<ReturnType<DispatchStore['repository']['execute']>>;
    try {
      decided = await this.store.repository.execute(
        streamId,
        { type: 'RetryDispatch', requestId: caller.requestId, now: new Date().toISOString(), connectionId },
        { accountId: caller.accountId, mode: caller.mode, requestId: caller.requestId },
      );
    } catch (error) {
      if (error instanceof DispatchNotRetryable) return failure('dispatch_not_retryable', error.message, 'id');
      if (error instanceof DispatchNotFound) return failure('resource_missing', `No such dispatch: ${id}`, 'id');
      throw error;
    }
    await this.store.showDecided(decided);
    return success(toDispatchResource(decided.state as Dispatch));
  }

  /** The connection a live run (or its dry run) on `channel` uses: the channel's active one, else why there is none (422). */
  async liveConnection(caller: CreateDispatchRequest['caller'], channel: Channel): Promise<Outcome<string>> {
    const connection = await this.resolveConnection({ accountId: caller.accountId, mode: caller.mode, channel });
    if (!connection.ok) return connection;
    return this.usableForLive(channel, connection.value.connection);
  }

  private usableForLive(channel: Channel, found: ResolvedConnection['connection']): Outcome<string> {
    if (!found || found.status === 'revoked' || found.status === 'pending')
      return failure(
        'connection_required',
        `A live dispatch to ${channel} needs an active connection for ${channel}; connect a provider account first.`,
        'channel',
      );
    if (found.status === 'reauth_required')
      return failure('connection_reauth_required', `The ${channel} connection needs re-authentication before live dispatches can run.`, 'channel');
    if (!this.live.available(channel))
      return failure(
        'channel_live_unavailable',
        `Live dispatches to ${channel} cannot run on this service as it is configured; use a test key for the sandbox, or ask the operator.`,
        'channel',
      );
    return success(found.id);
  }

  private async resolveConnection(request: ResolveConnectionRequest): Promise<Outcome<ResolvedConnection>> {
    try {
      return success(await this.local.request<ResolvedConnection>(this.bus, SUBJECTS.connectionResolve, request, { timeoutMs: 5000 }));
    } catch (error) {
      if (error instanceof BusTimeoutError || error instanceof BusUnavailableError) {
        this.logger.warn(`connection-service unreachable: ${error.message}`);
        return failure('service_unavailable', 'Connections cannot be checked right now; try again shortly.');
      }
      throw error;
    }
  }
}
