export * from './given';
