export * from './aggregate-repository';
