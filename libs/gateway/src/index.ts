export * from './gateway.module';
export * from './http-app';
