export * from './bus.contract';
export * from './nats-server';
export * from './wait-for';
export * from './nats-cluster';
