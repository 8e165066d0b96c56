import {
  CreditLedger,
  CreditLedgerCommand,
  creditLedgerDecider,
  CreditLedgerEvent,
  creditLedgerStreamId,
  CREDIT_LEDGER_STREAM_PREFIX,
  ledgerOfStream,
  Mode,
  upcastCreditLedgerEvent,
} from '@campaign-ops/dispatch-domain';
import { inCanonicalOrder, LiveProjection, Projection, toDomainEvent, toStoredEvent } from '@campaign-ops/event-sourcing';
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

/** The `credit_ledgers` document of a ledger at a revision (also what a rebuild writes). */
export const toLedgerView = (state: CreditLedger, revision: number): LedgerView => ({
  id: `${state.accountId}:${state.mode}`,
  account_id: state.accountId,
  mode: state.mode,
  balance: state.balance,
  grant_ids: state.grantIds,
  revision,
});

/**
 * The `credit_ledgers` read model: each ledger's balance and grants, at a revision. Its processor
 * also makes sure every charge has its dispatch (ChargedDispatches.completeCharge), so a rebuild
 * leaves that checkpoint alone.
 */
export const creditLedgersProjection: Projection<CreditLedger> = {
  name: 'credit_ledgers',
  streamPrefix: CREDIT_LEDGER_STREAM_PREFIX,
  collections: [{ name: 'credit_ledgers', indexes: ['account_id'] }],
  processor: { name: 'credit-ledgers', reacts: true },
  documentId: (streamId) => ledgerOfStream(streamId).join(':'),
  initialState: (streamId) => creditLedgerDecider(...ledgerOfStream(streamId)).initialState,
  evolve: (state, event) => creditLedgerDecider(state.accountId, state.mode).evolve(state, toDomainEvent<CreditLedgerEvent>(event, upcastCreditLedgerEvent)),
  documents: (state, revision) => [{ collection: 'credit_ledgers', doc: toLedgerView(state, revision) }],
  // A ledger stream grows with every dispatch: the live path goes on from its document, a snapshot
  // at a revision (one written before the revision was kept in it cannot be continued).
  resume: (doc) => {
    const view = doc as LedgerView;
    return typeof view.revision === 'number'
      ? { state: { accountId: view.account_id, mode: view.mode, balance: view.balance, grantIds: view.grant_ids }, revision: view.revision }
      : null;
  },
};

const MAX_CONFLICTS = 50;
/** Commands of one ledger decided and appended together, at most. */
const MAX_BATCH = 500;
/** Ledgers whose last write this process remembers (see CreditLedgers.written); all let go at once beyond it. */
const REMEMBERED_LEDGERS = 10_000;

export interface LedgerOutcome {
  /** The ledger after this command. */
  state: CreditLedger;
  recorded: RecordedEvent[];
}

interface QueuedCommand {
  command: CreditLedgerCommand;
  metadata: Record<string, unknown>;
  resolve(outcome: LedgerOutcome): void;
  reject(error: unknown): void;
}

/**
 * Credit ledgers (`credits-<account>-<mode>`). A ledger stream grows with every dispatch, so its
 * state is read from the `credit_ledgers` view (a snapshot at a revision) plus the events after
 * it, never by replaying the whole stream on every charge.
 */
@Injectable()
export class CreditLedgers {
  readonly live: LiveProjection<CreditLedger>;
  readonly views: Collection<LedgerView>;
  /** Per ledger stream, the commands waiting for its next write; present while one is being written. */
  private readonly queues = new Map<string, QueuedCommand[]>();
  /**
   * Per ledger stream, its state and revision as this process last appended them: the next batch
   * decides on it without reading the view and the stream. Anyone else's append since (another
   * replica) makes the next one fail its expected revision, and the ledger is then read again.
   */
  private readonly written = new Map<string, { state: CreditLedger; revision: number }>();

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) readStore: ReadStore,
  ) {
    this.live = new LiveProjection(creditLedgersProjection, eventStore, readStore);
    this.views = this.live.collection<LedgerView>('credit_ledgers');
  }

  /**
   * Decides and records one command on the account's ledger. Commands for one ledger that arrive
   * while it is being written are decided together, one after the other on the state each leaves,
   * and appended in one write: a burst of launches costs one ledger read and one append, not one
   * each, and no command ever sees a balance another has already spent. A refused command (e.g.
   * insufficient credits) fails alone.
   */
  execute(accountId: string, mode: Mode, command: CreditLedgerCommand, metadata: Record<string, unknown>): Promise<LedgerOutcome> {
    const streamId = creditLedgerStreamId(accountId, mode);
    return new Promise<LedgerOutcome>((resolve, reject) => {
      const queue = this.queues.get(streamId);
      if (queue) return void queue.push({ command, metadata, resolve, reject });
      this.queues.set(streamId, [{ command, metadata, resolve, reject }]);
      void this.drain(streamId, accountId, mode);
    });
  }

  /** Writes the ledger's queued commands, a batch at a time, until none is left. */
  private async drain(streamId: string, accountId: string, mode: Mode): Promise<void> {
    for (;;) {
      const queue = this.queues.get(streamId)!;
      if (queue.length === 0) return void this.queues.delete(streamId);
      const batch = queue.splice(0, MAX_BATCH);
      try {
        await this.executeBatch(streamId, accountId, mode, batch);
      } catch (error) {
        for (const queued of batch) queued.reject(error);
      }
    }
  }

  private async executeBatch(streamId: string, accountId: string, mode: Mode, batch: QueuedCommand[]): Promise<void> {
    const decider = creditLedgerDecider(accountId, mode);
    for (let conflicts = 0; ; conflicts++) {
      const { state: initial, revision } = this.written.get(streamId) ?? (await this.load(accountId, mode));
      let state = initial;
      const decisions = batch.map((queued) => {
        try {
          const events = decider.decide(queued.command, state).map(inCanonicalOrder);
          state = events.reduce(decider.evolve, state);
          return { queued, state, stored: events.map((e) => toStoredEvent(e, { ...queued.metadata, accountId, mode })) };
        } catch (error) {
          return { queued, error };
        }
      });
      const toAppend = decisions.flatMap((d) => d.stored ?? []);
      let first = 0;
      // The position of the write's last event: an event store gives no other. (Read only when
      // something was written, which sets it.)
      // Stryker disable next-line StringLiteral: never read unless the append below has set it
      let position = '';
      if (toAppend.length > 0) {
        try {
          const result = await this.eventStore.append(streamId, toAppend, { expectedRevision: revision ?? 'no_stream' });
          first = result.nextRevision - toAppend.length + 1;
          position = result.position;
          // Stryker disable next-line all: a bound on memory only; a ledger let go is read again at its next write
          if (this.written.size >= REMEMBERED_LEDGERS) this.written.clear();
          this.written.set(streamId, { state, revision: result.nextRevision });
          await this.store(state, result.nextRevision);
        } catch (error) {
          // Whatever failed, the ledger is read again: a conflict means another writer moved it on.
          this.written.delete(streamId);
          // Another replica charged or granted first: decide again on the new state, after a pause.
          if (!(error instanceof WrongExpectedRevisionError) || conflicts >= MAX_CONFLICTS) throw error;
          // Stryker disable next-line ArithmeticOperator: a random pause of up to 20 ms or of up to 0.05 ms; only how far apart the replicas retry differs
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
          continue;
        }
      }
      const occurredAt = new Date().toISOString();
      for (const decision of decisions) {
        if (decision.stored === undefined) {
          decision.queued.reject(decision.error);
          continue;
        }
        const recorded = decision.stored.map((e) => ({ ...e, streamId, revision: first++, position, metadata: e.metadata ?? {}, occurredAt }));
        decision.queued.resolve({ state: decision.state, recorded });
      }
      return;
    }
  }

  /** The ledger as of its last event: the view, then whatever the stream has beyond it. */
  async load(accountId: string, mode: Mode): Promise<{ state: CreditLedger; revision: number | null }> {
    const { state, revision } = await this.live.current(creditLedgerStreamId(accountId, mode));
    return { state, revision };
  }

  /** The ledger's stored events (a rare, whole read: used to find an orphaned charge). */
  history(accountId: string, mode: Mode): Promise<RecordedEvent[]> {
    return this.eventStore.readStream(creditLedgerStreamId(accountId, mode));
  }

  /** Brings the view up to the stream (the projection does this; commands write it inline), unless it already holds `atLeast`. */
  async refreshView(accountId: string, mode: Mode, atLeast?: number): Promise<void> {
    await this.live.refresh(creditLedgerStreamId(accountId, mode), atLeast);
  }

  private async store(state: CreditLedger, revision: number): Promise<void> {
    await this.views.upsert(toLedgerView(state, revision), revision);
  }
}
