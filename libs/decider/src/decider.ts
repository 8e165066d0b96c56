/**
 * The shape every aggregate of this service takes: pure `decide` and `evolve`, no I/O.
 * Events carry a schema `version`; `upcast` turns stored older versions into the current one.
 */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  version: number;
  data: Data;
}

export interface Decider<Command, Event extends DomainEvent, State> {
  initialState: State;
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
}

export const fold = <Event extends DomainEvent, State>(
  decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>,
  events: readonly Event[],
): State => events.reduce(decider.evolve, decider.initialState);

/** The events of commands decided one after the other, each on the state the ones before left. */
export function decideAll<Command, Event extends DomainEvent, State>(decider: Decider<Command, Event, State>, commands: readonly Command[]): Event[] {
  let state = decider.initialState;
  return commands.flatMap((command) => {
    const events = decider.decide(command, state);
    state = events.reduce(decider.evolve, state);
    return events;
  });
}

/** For exhaustive switches: a new command or event type fails to compile until it is handled. */
export function assertNever(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`);
}

/** A rule of the domain was broken by a command; services map these to API errors. */
export abstract class DomainRuleViolation extends Error {
  abstract readonly rule: string;
}
