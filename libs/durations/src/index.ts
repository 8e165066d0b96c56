export * from './durations';
