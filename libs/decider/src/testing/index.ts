export * from './given';
export * from './event-fixtures';
