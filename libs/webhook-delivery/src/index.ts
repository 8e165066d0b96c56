export * from './webhook-delivery.module';
export * from './endpoint-store';
export * from './endpoint-commands';
export * from './fan-out';
export * from './delivery-worker';
export * from './delivery-queries';
export * from './delivery-store';
