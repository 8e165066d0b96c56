export * from './bus.client';
export * from './bus.context';
export * from './bus.transport';
export * from './durable-consumer.options';
export * from './bus-exception.filter';
