export * from './dispatch.events';
export * from './dispatch.decider';
export * from './dispatch.views';
export * from './credit-ledger.decider';
