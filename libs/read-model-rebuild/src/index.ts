export * from './read-models';
export * from './rebuild';
export * from './synthetic-history';
