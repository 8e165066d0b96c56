export * from './bus.port';
export * from './bus-logger';
