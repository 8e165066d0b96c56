import { Injectable } from '@nestjs/common';
import { decide, Dispatch, DispatchCharged, dispatchStreamId, evolve, ledgerOfStream, Mode } from '@campaign-ops/dispatch-domain';
import { inCanonicalOrder, toStoredEvent } from '@campaign-ops/event-sourcing';
import { RecordedEvent, WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { deterministicUlid, ulidToUuid } from '@campaign-ops/ids';
import { CreditLedgers } from './credit-ledgers';
import { DispatchStore, toView } from './dispatch-store';

/**
 * One charge, one dispatch: how a launch that paid always gets its dispatch, whatever stops it.
 *
 * 1. A launch charges the ledger first (`DispatchCharged` carries the whole dispatch to make), then
 *    makes the dispatch from the charge right away (DispatchCommands.create → `make`).
 * 2. Should the process die in between, the ledger's processor makes it: every ledger event passes
 *    `completeCharge` (the `credit-ledgers` projection's reaction, see DispatchProcessors).
 * 3. A retry with the launch's Idempotency-Key that finds no dispatch looks for the charge
 *    (`orphanedCharge`) and makes the dispatch from it, instead of charging again.
 *
 * The dispatch's first event id derives from the charge's, so making it twice appends once. Within
 * a process a make under way is joined, not run again: the ledger's processor is told of a charge
 * as soon as it is stored, often while the launch that paid is still appending its dispatch (the
 * event store's writer thread has not answered yet), and would otherwise append and write the view
 * a second time for nothing.
 */
@Injectable()
export class ChargedDispatches {
  constructor(
    private readonly store: DispatchStore,
    private readonly ledgers: CreditLedgers,
  ) {}

  /** The makes under way in this process, by dispatch id. */
  private readonly making = new Map<string, Promise<Dispatch>>();

  /** The dispatch a charge paid for, made (once) and its view written; answers it as accepted. */
  make(charge: Pick<RecordedEvent, 'id' | 'data'>, accountId: string, mode: Mode): Promise<Dispatch> {
    const { dispatchId } = (charge.data as DispatchCharged['data']).dispatch;
    const underWay = this.making.get(dispatchId);
    if (underWay) return underWay;
    const made = this.makeNow(charge, accountId, mode).finally(() => this.making.delete(dispatchId));
    this.making.set(dispatchId, made);
    return made;
  }

  private async makeNow(charge: Pick<RecordedEvent, 'id' | 'data'>, accountId: string, mode: Mode): Promise<Dispatch> {
    const { dispatch, chargedAt } = charge.data as DispatchCharged['data'];
    const streamId = dispatchStreamId(dispatch.dispatchId);
    const [accepted] = decide(
      {
        type: 'CreateDispatch',
        dispatchId: dispatch.dispatchId,
        accountId,
        mode,
        channel: dispatch.channel,
        campaign: dispatch.campaign,
        connectionId: dispatch.connectionId,
        idempotencyKey: dispatch.idempotencyKey,
        now: chargedAt,
      },
      { status: 'none' },
    ).map(inCanonicalOrder);
    // Derived from the charge (so a second append is a no-op) and still time-ordered like every event id.
    const eventId = ulidToUuid(deterministicUlid(Date.parse(chargedAt), `dispatch-accepted:${charge.id}`));
    const stored = { ...toStoredEvent(accepted, { accountId, mode, requestId: dispatch.requestId }), id: eventId };
    const made = evolve({ status: 'none' }, accepted) as Dispatch;
    try {
      await this.store.events.append(streamId, [stored], { expectedRevision: 'no_stream' });
      // Just made: its view is this one event, no read needed (read-your-writes for GET).
      await this.store.views.upsert(toView(made), 0);
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      // Made before (a retry, or the ledger processor after a crash): the view follows the stream.
      await this.store.refreshView(streamId);
    }
    return made;
  }

  /** Whether the dispatch was made (its view exists: the view is written right after the stream). */
  async exists(dispatchId: string): Promise<boolean> {
    return (await this.store.views.revisionOf(dispatchId)) !== null;
  }

  /** A ledger event: a charge whose dispatch was never made gets it now. */
  async completeCharge(event: RecordedEvent): Promise<void> {
    if (event.type !== 'DispatchCharged') return;
    const { dispatchId } = (event.data as DispatchCharged['data']).dispatch;
    // The launch that charged is making its dispatch (joined, no read), or made it and its view
    // right after: then there is nothing to do.
    if (this.making.has(dispatchId) || !(await this.exists(dispatchId))) await this.make(event, ...ledgerOfStream(event.streamId));
  }

  /** The charge for `dispatchId` on the ledger, if the launch got that far (a rare, whole read of the ledger). */
  async orphanedCharge(accountId: string, mode: Mode, dispatchId: string): Promise<RecordedEvent | undefined> {
    return (await this.ledgers.history(accountId, mode)).find(
      (event) => event.type === 'DispatchCharged' && (event.data as DispatchCharged['data']).dispatch.dispatchId === dispatchId,
    );
  }
}
