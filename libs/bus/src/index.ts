export * from './bus.port';
export * from './bus-logger';
export * from './reply-within';
