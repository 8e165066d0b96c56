import { DomainEvent } from './decider';

/** One step of an event's history: the data of version N, as stored, turned into the data of version N + 1. Pure. */
export type Upcast = (data: Record<string, unknown>) => Record<string, unknown>;

/**
 * Every event type of an aggregate with its upcasters, oldest first: `[]` while the type has only
 * ever had version 1, `[v1ToV2]` once its shape changed, and so on. The current version is the
 * length of the chain plus one, so the version written and the versions read cannot drift apart.
 */
export type EventVersionChains<Event extends DomainEvent> = { readonly [Type in Event['type']]: readonly Upcast[] };

type EventOf<Event extends DomainEvent, Type extends Event['type']> = Extract<Event, { type: Type }>;

/** The schema history of one aggregate's events: writes stamp the current version, reads upcast to it. */
export interface EventVersions<Event extends DomainEvent> {
  /** The aggregate, as error messages name it ("dispatch", "credit ledger"). */
  readonly aggregate: string;
  readonly types: ReadonlyArray<Event['type']>;
  currentVersion(type: Event['type']): number;
  /** A new event, at its type's current version: deciders create events with this. */
  event<Type extends Event['type']>(type: Type, data: EventOf<Event, Type>['data']): EventOf<Event, Type>;
  /** A stored event as the current version of its type; an unknown type or a version newer than this code knows throws. */
  upcast(type: string, data: Record<string, unknown>, version: number): Event;
}

export function eventVersions<Event extends DomainEvent>(aggregate: string, chains: EventVersionChains<Event>): EventVersions<Event> {
  const chainOf = (type: string): readonly Upcast[] | undefined =>
    Object.prototype.hasOwnProperty.call(chains, type) ? (chains as Record<string, readonly Upcast[]>)[type] : undefined;
  return {
    aggregate,
    types: Object.keys(chains) as Array<Event['type']>,
    currentVersion: (type) => chainOf(type)!.length + 1,
    event: (type, data) => ({ type, version: chainOf(type)!.length + 1, data }) as never,
    upcast(type, data, version) {
      const chain = chainOf(type);
      if (!chain) throw cannotRead(aggregate, type, version, 'no such event type');
      if (!Number.isInteger(version) || version < 1) throw cannotRead(aggregate, type, version, 'a version is a whole number from 1');
      // A newer release wrote it (a rollback, or a replica not yet upgraded): guessing would corrupt the state.
      if (version > chain.length + 1) throw cannotRead(aggregate, type, version, `this code reads up to v${chain.length + 1}`);
      // Every event a rebuild replays passes here: a loop, not a slice of the chain and a reduce.
      let current = data;
      for (let step = version - 1; step < chain.length; step++) current = chain[step](current);
      return { type, version: chain.length + 1, data: current } as Event;
    },
  };
}

function cannotRead(aggregate: string, type: string, version: number, why: string): Error {
  return new Error(`cannot read ${aggregate} event ${type} v${version}: ${why}`);
}

/** The schema version in a stored event's metadata; events written before versions were recorded are v1. */
export function storedVersion(metadata: Record<string, unknown> | undefined): number {
  const version = metadata?.['version'];
  if (version === undefined || version === null) return 1;
  // Metadata comes back from JSON; a number written as text is still that number.
  const parsed = typeof version === 'string' && /^\d+$/.test(version) ? Number(version) : version;
  if (typeof parsed !== 'number' || !Number.isInteger(parsed) || parsed < 1) throw new Error(`not an event version: ${JSON.stringify(version)}`);
  return parsed;
}
