export * from './connections.module';
export * from './resolve-connection';
