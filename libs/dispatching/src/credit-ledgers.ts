import { fold } from '@campaign-ops/decider';
import {
  CreditLedger,
  CreditLedgerCommand,
  creditLedgerDecider,
  CreditLedgerEvent,
  creditLedgerStreamId,
  Mode,
  upcastCreditLedgerEvent,
} from '@campaign-ops/dispatch-domain';
import { KeyedMutex, toDomainEvent, toStoredEvent } from '@campaign-ops/event-sourcing';
import { Inject, Injectable } from '@nestjs/common';
import { EVENT_STORE, EventStore, RecordedEvent, WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';

export interface LedgerView {
  id: string;
  account_id: string;
  mode: Mode;
  balance: number;
  grant_ids: string[];
  /** The stream revision this snapshot is at, in the document itself: one read gives both. */
  revision: number;
  [key: string]: unknown;
}

const MAX_CONFLICTS = 50;

/**
 * Credit ledgers (`credits-<account>-<mode>`). A ledger stream grows with every dispatch, so its
 * state is read from the `credit_ledgers` view (a snapshot at a revision) plus the events after
 * it, never by replaying the whole stream on every charge.
 */
@Injectable()
export class CreditLedgers {
  readonly views: Collection<LedgerView>;
  private readonly mutex = new KeyedMutex();

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) readStore: ReadStore,
  ) {
    this.views = readStore.collection<LedgerView>('credit_ledgers', { indexes: ['account_id'] });
  }

  async execute(accountId: string, mode: Mode, command: CreditLedgerCommand, metadata: Record<string, unknown>): Promise<{ state: CreditLedger; recorded: RecordedEvent[] }> {
    const streamId = creditLedgerStreamId(accountId, mode);
    return this.mutex.run(streamId, async () => {
      for (let conflicts = 0; ; conflicts++) {
        const { state, revision } = await this.load(accountId, mode);
        const decided = creditLedgerDecider(accountId, mode).decide(command, state);
        if (decided.length === 0) return { state, recorded: [] };
        const toAppend = decided.map((e) => toStoredEvent(e, { ...metadata, accountId, mode }));
        try {
          const result = await this.eventStore.append(streamId, toAppend, { expectedRevision: revision ?? 'no_stream' });
          const after = decided.reduce(creditLedgerDecider(accountId, mode).evolve, state);
          await this.store(after, result.nextRevision);
          const first = result.nextRevision - toAppend.length + 1;
          return {
            state: after,
            recorded: toAppend.map((e, i) => ({ ...e, streamId, revision: first + i, position: result.position, metadata: e.metadata ?? {}, occurredAt: new Date().toISOString() })),
          };
        } catch (error) {
          // Another replica charged or granted first: decide again on the new state, after a pause.
          if (!(error instanceof WrongExpectedRevisionError) || conflicts >= MAX_CONFLICTS) throw error;
          // Stryker disable next-line ArithmeticOperator: a random pause of up to 20 ms or of up to 0.05 ms; only how far apart the replicas retry differs
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
        }
      }
    });
  }

  /** The ledger as of its last event: the view, then whatever the stream has beyond it. */
  async load(accountId: string, mode: Mode): Promise<{ state: CreditLedger; revision: number | null }> {
    // One read: a snapshot and its revision read apart could straddle a concurrent write.
    const view = await this.views.get(`${accountId}:${mode}`);
    // A snapshot without its revision cannot be continued: then the stream is read from the start.
    const viewRevision = view && typeof view.revision === 'number' ? view.revision : null;
    const snapshot: CreditLedger = view && viewRevision !== null ? { accountId, mode, balance: view.balance, grantIds: view.grant_ids } : creditLedgerDecider(accountId, mode).initialState;
    const tail = await this.eventStore.readStream(creditLedgerStreamId(accountId, mode), viewRevision === null ? {} : { fromRevision: viewRevision + 1 });
    const events = tail.map((r) => toDomainEvent<CreditLedgerEvent>(r, upcastCreditLedgerEvent));
    const state = fold({ initialState: snapshot, evolve: creditLedgerDecider(accountId, mode).evolve }, events);
    const revision = tail.length ? tail[tail.length - 1].revision : viewRevision;
    return { state, revision };
  }

  /** The ledger's stored events (a rare, whole read: used to find an orphaned charge). */
  history(accountId: string, mode: Mode): Promise<RecordedEvent[]> {
    return this.eventStore.readStream(creditLedgerStreamId(accountId, mode));
  }

  /** Brings the view up to the stream (the projection calls this; commands refresh it inline). */
  async refreshView(accountId: string, mode: Mode): Promise<void> {
    const { state, revision } = await this.load(accountId, mode);
    if (revision !== null) await this.store(state, revision);
  }

  private async store(state: CreditLedger, revision: number): Promise<void> {
    await this.views.upsert({ id: `${state.accountId}:${state.mode}`, account_id: state.accountId, mode: state.mode, balance: state.balance, grant_ids: state.grantIds, revision }, revision);
  }
}
