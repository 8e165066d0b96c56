export * from './decider';
export * from './event-versions';
