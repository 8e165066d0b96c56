export * from './container-runtime';
