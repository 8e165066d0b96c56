export * from './aggregate-repository';
export * from './keyed-mutex';
export * from './canonical-order';
