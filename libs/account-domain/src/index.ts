export * from './mode';
export * from './account.decider';
export * from './api-key';
