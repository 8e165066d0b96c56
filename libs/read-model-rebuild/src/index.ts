export * from './read-models';
export * from './rebuild';
export * from './read-model-check';
export * from './synthetic-history';
