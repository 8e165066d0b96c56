export * from './bus.port';
export * from './bus-logger';
export * from './in-process-bus';
export * from './nats-bus';
export * from './nats-permissions';
