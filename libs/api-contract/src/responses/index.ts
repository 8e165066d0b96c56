export * from './schema';
export * from './dispatch.response';
export * from './connection.response';
export * from './webhook.response';
export * from './event.response';
export * from './account.response';
export * from './operations.response';
