export * from './connection.decider';
