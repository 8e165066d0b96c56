export * from './aggregate-repository';
export * from './keyed-mutex';
