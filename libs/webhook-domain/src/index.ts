export * from './webhook-events';
export * from './retry-schedule';
export * from './delivery';
export * from './webhook-endpoint.decider';
