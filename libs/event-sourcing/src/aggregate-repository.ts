import { Decider, DomainEvent, fold, storedVersion } from '@campaign-ops/decider';
import { EventStore, EventToAppend, RecordedEvent, WrongExpectedRevisionError } from '@campaign-ops/event-store';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { inCanonicalOrder, sortedKeys } from './canonical-order';
import { KeyedMutex } from './keyed-mutex';

export type Upcaster<Event extends DomainEvent> = (type: string, data: Record<string, unknown>, version: number) => Event;

/** Who and what caused a write: tenancy and tracing, kept beside every event. */
export interface EventMetadata {
  accountId?: string;
  mode?: string;
  requestId?: string | null;
  [key: string]: unknown;
}

export interface Decided<Event extends DomainEvent, State> {
  /** The events appended by this command, as stored. */
  recorded: RecordedEvent[];
  /** The same events, as domain events. */
  events: Event[];
  /** The stream's state after them. */
  state: State;
}

/** A stream as a caller knows it: the state its events give, and its last revision (null: no stream). */
export interface Known<State> {
  state: State;
  revision: number | null;
}

/** A stream as read and folded: its events as domain events, the state they give, its last revision. */
export interface Loaded<Event extends DomainEvent, State> extends Known<State> {
  history: Event[];
}

/** A stored event as the current version of its type (the domain's upcasters bring older versions up to date). */
export const toDomainEvent = <Event extends DomainEvent>(recorded: Pick<RecordedEvent, 'type' | 'data' | 'metadata'>, upcast: Upcaster<Event>): Event =>
  upcast(recorded.type, recorded.data, storedVersion(recorded.metadata));

export const toStoredEvent = (event: DomainEvent, metadata: EventMetadata): EventToAppend => ({
  id: ulidToUuid(ulid()),
  type: event.type,
  data: event.data as Record<string, unknown>,
  metadata: sortedKeys({ ...metadata, version: event.version }),
});

/**
 * Commands on one stream run one after another within this process, whichever repository runs
 * them (a hundred concurrent key issues on one account would otherwise all read one revision, and
 * all but one conflict, retry and conflict again).
 */
const streams = new KeyedMutex();

/**
 * Runs commands against event-sourced aggregates: read the stream, fold, decide, append with the
 * revision read (optimistic concurrency). In this process, commands on a stream wait their turn;
 * a writer elsewhere (another replica, the ops command line) makes the append fail, and the command
 * is then decided again on the new state after a short jittered pause, a few times, before the
 * conflict is reported.
 */
export class AggregateRepository<Command, Event extends DomainEvent, State> {
  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<Command, Event, State>,
    private readonly upcast: Upcaster<Event>,
    private readonly maxConflictRetries = 8,
  ) {}

  async load(streamId: string): Promise<Loaded<Event, State>> {
    const recorded = await this.store.readStream(streamId);
    const history = recorded.map((r) => toDomainEvent(r, this.upcast));
    return { history, state: fold(this.decider, history), revision: recorded.length ? recorded[recorded.length - 1].revision : null };
  }

  /**
   * Decides `command` on the stream's state and appends what it decides. `known`: the stream as the
   * caller knows it (its state and last revision: just read, or carried forward), decided on
   * instead of reading it again; the append still expects that revision, so a stream that has moved
   * on since is read and decided on again, as after any conflict.
   */
  execute(streamId: string, command: Command, metadata: EventMetadata, known?: Known<State>): Promise<Decided<Event, State>> {
    return streams.run(streamId, () => this.decideAndAppend(streamId, command, metadata, known));
  }

  private async decideAndAppend(streamId: string, command: Command, metadata: EventMetadata, known?: Known<State>): Promise<Decided<Event, State>> {
    for (let attempt = 0; ; attempt++) {
      const { state, revision } = attempt === 0 && known ? known : await this.load(streamId);
      const events = this.decider.decide(command, state).map(inCanonicalOrder);
      if (events.length === 0) return { recorded: [], events, state };
      const toAppend = events.map((e) => toStoredEvent(e, metadata));
      try {
        const result = await this.store.append(streamId, toAppend, { expectedRevision: revision ?? 'no_stream' });
        const firstRevision = result.nextRevision - toAppend.length + 1;
        const recorded = toAppend.map<RecordedEvent>((e, i) => ({
          id: e.id,
          streamId,
          type: e.type,
          revision: firstRevision + i,
          position: result.position,
          data: e.data,
          metadata: e.metadata ?? {},
          occurredAt: new Date().toISOString(),
        }));
        return { recorded, events, state: events.reduce(this.decider.evolve, state) };
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= this.maxConflictRetries) throw error;
        // Another process wrote first: let it finish its own round before reading again.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * (attempt + 1)));
      }
    }
  }
}
