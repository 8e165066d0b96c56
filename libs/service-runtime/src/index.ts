export * from './config';
export * from './infrastructure';
export * from './infrastructure.tokens';
export * from './infrastructure.module';
export * from './event-relay';
export * from './background-loop';
export * from './start-app';
