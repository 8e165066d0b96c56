export * from './connection.decider';
export * from './connection.views';
