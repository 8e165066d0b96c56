import { Decider, DomainEvent, fold } from '../decider';

/**
 * given(events).when(command).then(events) for deciders, so a test reads like the rule it proves.
 */
export function specFor<C, E extends DomainEvent, S>(decider: Decider<C, E, S>) {
  return (...history: E[]) => ({
    when: (command: C) => {
      const run = () => decider.decide(command, fold(decider, history));
      return {
        then: (expected: E[]) => expect(run()).toEqual(expected),
        thenThrows: (error: new (...args: never[]) => Error) => expect(run).toThrow(error),
        /** The events decided, for assertions that need more than equality. */
        events: run,
      };
    },
    state: () => fold(decider, history),
  });
}
