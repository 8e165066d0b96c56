export * from './connections.module';
