export * from './dispatching.module';
export * from './dispatch-store';
export * from './dispatch-commands';
export * from './dispatch-queries';
export * from './dispatch-executor';
export * from './dispatch-relay';
export * from './credit-ledgers';
export * from './credit-handlers';
